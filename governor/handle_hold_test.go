package governor_test

import (
	"context"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/histogram"
	"github.com/governor-dev/governor/internal/leasetest"
)

// A lease taken in one process and released by its handle in another
// ('governor acquire', then 'governor release') counts in the backend's
// hold histogram, as one released by its own *Lease does.
func TestReleaseHandleRecordsHold(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	open := func() *governor.Governor {
		g := leasetest.FileGovernor(t, dir, governor.Options{Project: "p"})
		return g
	}
	g1 := open()
	l, err := g1.Acquire(ctx, "r", governor.AcquireOptions{Limit: 1, TTL: time.Minute, NoHeartbeat: true})
	if err != nil {
		t.Fatal(err)
	}
	l.Detach()
	if err := g1.Close(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // a hold longer than zero
	g2 := open()
	if err := g2.ReleaseHandle(ctx, l.Handle(), false); err != nil {
		t.Fatal(err)
	}
	if err := g2.Close(); err != nil { // Close sends what is pending
		t.Fatal(err)
	}
	g3 := open()
	defer g3.Close()
	st, err := g3.Status(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	if n := st.Histograms[histogram.Hold].Count(); n != 1 {
		t.Fatalf("hold histogram counts %d holds after a release by handle, want 1 (histograms %v)", n, st.Histograms)
	}
}
