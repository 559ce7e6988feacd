// Package leasetest opens governors and takes leases for tests that need
// a slot held.
package leasetest

import (
	"context"
	"testing"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/filebackend"
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

// FileGovernor is a governor over a file backend in dir, closed at the
// end of t.
func FileGovernor(t testing.TB, dir string, o governor.Options) *governor.Governor {
	t.Helper()
	b, err := filebackend.New(dir, filebackend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g, err := governor.New(b, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	return g
}

// Reserve reserves spends on their budgets with g, as o says: an Ask of
// spend budgets alone (governor.Hold), its reservation.
func Reserve(ctx context.Context, g *governor.Governor, spends []governor.BudgetSpend, o governor.BudgetOptions) (*governor.BudgetReservation, error) {
	h, err := g.Hold(ctx, governor.Ask{Spends: spends, Budget: o})
	if err != nil {
		return nil, err
	}
	return h.Spend, nil
}
