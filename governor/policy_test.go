package governor_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/eventkind"
	"github.com/governor-dev/governor/internal/leasetest"
)

func TestPolicyEncodeParse(t *testing.T) {
	for _, p := range []governor.Policy{
		{},
		{MaxQueue: 3},
		{Classes: []governor.Class{{Name: "critical", Reserve: 1}, {Name: "batch", Cap: 2}}, MaxOvertakes: 4},
		{Fair: true, FairWeights: map[string]int{"b": 2, "a": 1}, FairCap: 2, MaxWait: time.Minute, Eager: true},
	} {
		enc := p.Encode()
		got, err := governor.ParsePolicy(enc)
		if err != nil || got.Encode() != enc {
			t.Errorf("ParsePolicy(%q) = %q, %v", enc, got.Encode(), err)
		}
		if p.IsZero() != (enc == "") {
			t.Errorf("policy %+v encodes as %q", p, enc)
		}
	}
	if _, err := governor.ParsePolicy("c=a:x:0;"); !errors.Is(err, governor.ErrInvalid) {
		t.Errorf("a stored policy that does not read: %v", err)
	}
}

func TestPolicyClassIndex(t *testing.T) {
	withDefault := governor.Policy{Classes: []governor.Class{{Name: "critical"}, {Name: "default"}, {Name: "batch"}}}
	without := governor.Policy{Classes: []governor.Class{{Name: "hi"}, {Name: "lo"}}}
	for _, tc := range []struct {
		p    governor.Policy
		prio string
		want int
		ok   bool
	}{
		{withDefault, "", 1, true},
		{withDefault, "batch", 2, true},
		{withDefault, "urgent", 0, false},
		{without, "", 1, true}, // the lowest
		{without, "hi", 0, true},
		{governor.Policy{}, "", 0, true},
		{governor.Policy{}, "hi", 0, false},
	} {
		got, ok := tc.p.Rules().ClassIndex(tc.prio)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s.ClassIndex(%q) = %d, %v; want %d, %v", tc.p.Encode(), tc.prio, got, ok, tc.want, tc.ok)
		}
	}
}

// Bad options are refused before anything reaches the backend, naming
// the value and what is allowed.
func TestAcquirePolicyOptionsRefused(t *testing.T) {
	g := leasetest.FileGovernor(t, t.TempDir(), governor.Options{})
	p := governor.Policy{Classes: []governor.Class{{Name: "critical", Reserve: 1}, {Name: "batch", Cap: 1}}}
	for _, tc := range []struct {
		o    governor.AcquireOptions
		want string
		is   error
	}{
		{governor.AcquireOptions{Limit: 2, Policy: p, Priority: "urgent"}, `priority "urgent" for r; allowed: critical, batch`, governor.ErrInvalid},
		{governor.AcquireOptions{Limit: 2, Priority: "hi"}, `priority "hi" for r; allowed: none`, governor.ErrInvalid},
		{governor.AcquireOptions{Limit: 2, Policy: p, FairKey: "a b"}, `fair key "a b" for r; allowed:`, governor.ErrInvalid},
		{governor.AcquireOptions{Limit: 2, Policy: p, Priority: "batch", Weight: 2}, "class batch is capped at 1", governor.ErrTooHeavy},
		{governor.AcquireOptions{Limit: 3, Policy: governor.Policy{Classes: []governor.Class{{Name: "critical", Reserve: 1}, {Name: "batch"}}},
			Priority: "batch", Weight: 3}, "class batch may use at most 2 of 3", governor.ErrTooHeavy},
		{governor.AcquireOptions{Limit: 2, Supersede: "x y"}, `supersede key "x y" for r`, governor.ErrInvalid},
		{governor.AcquireOptions{Limit: 2, CancelInProgress: true}, "cancel-in-progress for r without a supersede key", governor.ErrInvalid},
		{governor.AcquireOptions{Limit: 2, Supersede: "x", CancelInProgress: true}, "cancel-in-progress for r in Fail mode; allowed: in Wait mode only", governor.ErrInvalid},
		{governor.AcquireOptions{Limit: 2, Policy: governor.Policy{Classes: []governor.Class{{Name: "a", Reserve: 2}, {Name: "b"}}}},
			"the reserves of r sum to 2; allowed: at most the limit 2 minus 1", governor.ErrInvalid},
	} {
		_, err := g.Acquire(t.Context(), "r", tc.o)
		if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v; want %v containing %q", tc.o, err, tc.is, tc.want)
		}
	}
}

// A lease cancelled in progress closes Done with a *LeaseLostError of
// kind eventkind.CancelledInProgress but stays held until its Release (its
// work may still run), which hands the slot to the canceller.
func TestCancelInProgressHeldUntilRelease(t *testing.T) {
	g := leasetest.FileGovernor(t, t.TempDir(), governor.Options{TTL: 3 * time.Second, Heartbeat: 50 * time.Millisecond})
	old, err := g.Acquire(t.Context(), "deploy", governor.AcquireOptions{Limit: 1, Supersede: "main"})
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		l   *governor.Lease
		err error
	}
	got := make(chan result, 1)
	go func() {
		l, err := g.Acquire(t.Context(), "deploy", governor.AcquireOptions{Limit: 1, Supersede: "main", CancelInProgress: true, Mode: governor.Wait})
		got <- result{l, err}
	}()
	select {
	case <-old.Done():
	case <-time.After(time.Minute):
		t.Fatal("the cancelled lease's Done did not close")
	}
	var lost *governor.LeaseLostError
	if err := old.Err(); !errors.As(err, &lost) || lost.End.Kind != eventkind.CancelledInProgress {
		t.Fatalf("Err of the cancelled lease: %v, want a LeaseLostError of kind %s", err, eventkind.CancelledInProgress)
	}
	time.Sleep(200 * time.Millisecond) // a lease freed on loss would be handed on by now
	st, err := g.Status(t.Context(), "deploy")
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Holders) != 1 || st.Holders[0].LeaseID != old.ID() || len(st.Waiters) != 1 {
		t.Fatalf("before the cancelled lease's release: holders %+v, waiters %+v; want it held, the canceller queued", st.Holders, st.Waiters)
	}
	if err := old.Release(); !errors.Is(err, governor.ErrLeaseLost) {
		t.Fatalf("Release of the cancelled lease: %v, want ErrLeaseLost", err)
	}
	select {
	case r := <-got:
		if r.err != nil {
			t.Fatalf("the canceller: %v", r.err)
		}
		_ = r.l.Release()
	case <-time.After(time.Minute):
		t.Fatal("the canceller was not granted after the release")
	}
}
