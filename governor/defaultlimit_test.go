package governor_test

import (
	"context"
	"errors"
	"testing"

	"github.com/governor-dev/governor/governor"
)

// An acquire that gives no limit takes the limit stored with the
// resource, else 1: a resource nobody gave a limit to is a
// mutex, and a limit given once (live, or asked by a process) keeps
// ruling over callers that give none.
func TestNoLimitIsMutexUnlessStored(t *testing.T) {
	g := newFileGovernor(t)
	ctx := context.Background()
	l, err := g.Acquire(ctx, "heavy", governor.AcquireOptions{})
	if err != nil {
		t.Fatalf("acquire without a limit: %v; want a mutex", err)
	}
	if l.Limit() != 1 {
		t.Fatalf("limit in force %d; want 1, a mutex", l.Limit())
	}
	if _, err := g.Acquire(ctx, "heavy", governor.AcquireOptions{}); !errors.Is(err, governor.ErrBusy) {
		t.Fatalf("second acquire without a limit: %v; want busy (a mutex)", err)
	}
	if _, err := g.Hold(ctx, governor.Ask{Wants: []governor.Want{{Resource: "heavy"}}}); !errors.Is(err, governor.ErrBusy) {
		t.Fatalf("Hold without a limit: %v; want busy (a mutex)", err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}

	// A limit a process asked for is stored: callers giving none ask it.
	two, err := g.Acquire(ctx, "wide", governor.AcquireOptions{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	_ = two.Release()
	for i := 0; i < 2; i++ {
		if _, err := g.Acquire(ctx, "wide", governor.AcquireOptions{}); err != nil {
			t.Fatalf("acquire %d without a limit after a limit of 2 was asked: %v", i+1, err)
		}
	}
	if st, _ := g.Status(ctx, "wide"); st.Limit != 2 || st.DriftLimit != 0 {
		t.Fatalf("limit %d drift %d; want 2 and no drift", st.Limit, st.DriftLimit)
	}

	// A live limit rules too.
	if err := g.SetLimit(ctx, "live", 3, "test"); err != nil {
		t.Fatal(err)
	}
	if n, err := g.StoredLimit(ctx, "live"); n != 3 || err != nil {
		t.Fatalf("StoredLimit under a live limit of 3: %d, %v", n, err)
	}
	if _, err := g.StoredLimit(ctx, "bad name"); !errors.Is(err, governor.ErrInvalid) {
		t.Fatalf("StoredLimit of a bad name: %v; want ErrInvalid", err)
	}
}
