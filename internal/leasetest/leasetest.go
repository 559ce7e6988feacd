// Package leasetest takes leases for tests that need a slot held.
package leasetest

import (
	"context"
	"testing"

	"github.com/governor-dev/governor/governor"
)

// HoldHeavy takes the one slot of "heavy" (limit 1) in g, failing t when
// it cannot.
func HoldHeavy(t testing.TB, g *governor.Governor) *governor.Lease {
	t.Helper()
	l, err := g.Acquire(context.Background(), "heavy", governor.AcquireOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	return l
}
