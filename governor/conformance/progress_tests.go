package conformance

import (
	"errors"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/eventkind"
)

// backendProgress: a lease with a progress timeout is stalled once no
// Touch came for that long — renewals and marks refused (eventkind.Stalled)
// — but stays held, so nobody else is granted its slot until it is
// released or expires; a Touch in time keeps it going; a lease without a
// progress timeout never stalls; a mark is seen by Status.
func (s *suite) backendProgress(t *testing.T) {
	b := s.h.Open(t)
	other := s.h.Open(t) // the process that marks progress (governor touch)
	key := governor.Key{Project: project(), Resource: "heavy"}
	r := req(key, 1, 1, governor.Fail)
	r.Declaration.ProgressTimeout = 800 * time.Millisecond
	mustAcquire(t, b, r, governor.Granted)
	st := mustStatus(t, b, key)
	if len(st.Holders) != 1 || st.Holders[0].ProgressTimeout != r.Declaration.ProgressTimeout || st.Holders[0].Progress.IsZero() {
		t.Fatalf("status of a lease with a progress timeout: %+v", st.Holders)
	}
	granted := st.Holders[0].Progress
	s.h.Advance(t, 500*time.Millisecond)
	if _, err := other.Renew(ctxT(t), governor.Renewal{Key: key, ID: r.ID, Secret: "", Token: 0, Touch: true}); err != nil {
		t.Fatalf("Touch in time: %v", err)
	}
	if st := mustStatus(t, other, key); !st.Holders[0].Progress.After(granted) {
		t.Fatalf("the mark is not seen: progress %v, granted %v", st.Holders[0].Progress, granted)
	}
	s.h.Advance(t, 500*time.Millisecond) // 1s after the grant, 0.5s after the mark
	if _, err := b.Renew(ctxT(t), governor.Renewal{Key: key, ID: r.ID, Secret: "", Token: 0, TTL: 0}); err != nil {
		t.Fatalf("Renew after a mark in time: %v", err)
	}
	s.h.Advance(t, time.Second) // no mark for 1.5s
	_, err := b.Renew(ctxT(t), governor.Renewal{Key: key, ID: r.ID, Secret: "", Token: 0, TTL: 0})
	wantEnd(t, "renewal of a stalled lease", err, eventkind.Stalled, "no progress mark")
	_, err = other.Renew(ctxT(t), governor.Renewal{Key: key, ID: r.ID, Secret: "", Token: 0, Touch: true})
	wantEnd(t, "late mark of a stalled lease", err, eventkind.Stalled, "no progress mark")
	// Still held: its work may still run until its holder stops it.
	late := req(key, 1, 1, governor.Fail)
	mustAcquire(t, other, late, governor.Refused)
	release(t, b, key, r.ID)
	mustAcquire(t, other, late, governor.Granted)
	release(t, other, key, late.ID)
	// No progress timeout: never stalled; a mark is still shown.
	plain := req(key, 1, 1, governor.Fail)
	mustAcquire(t, b, plain, governor.Granted)
	if st := mustStatus(t, b, key); !st.Holders[0].Progress.IsZero() {
		t.Fatalf("a lease without progress timeout or mark shows progress %v", st.Holders[0].Progress)
	}
	s.h.Advance(t, time.Second)
	if _, err := b.Renew(ctxT(t), governor.Renewal{Key: key, ID: plain.ID, Secret: "", Token: 0, Touch: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Renew(ctxT(t), governor.Renewal{Key: key, ID: plain.ID, Secret: "", Token: 0, TTL: 0}); err != nil {
		t.Fatalf("renew of a lease without progress timeout: %v", err)
	}
	if st := mustStatus(t, b, key); st.Holders[0].Progress.IsZero() {
		t.Fatalf("a mark on a lease without progress timeout is not shown: %+v", st.Holders[0])
	}
	release(t, b, key, plain.ID)
	if _, err := b.Renew(ctxT(t), governor.Renewal{Key: key, ID: plain.ID, Secret: "", Token: 0, Touch: true}); !errors.Is(err, governor.ErrLeaseLost) {
		t.Fatalf("Touch of a released lease: %v, want ErrLeaseLost", err)
	}
}

// governorProgress: a heartbeating lease with a progress timeout is
// declared lost (Done closes, Err says stalled) when no mark comes, and
// its slot is not granted to anyone before its holder releases it.
func (s *suite) governorProgress(t *testing.T) {
	p := project()
	g := newGovernor(t, s.h.Open(t), governor.Options{Project: p, Session: "stuck", TTL: 3 * time.Second})
	l := mustLease(t, g, "heavy", governor.AcquireOptions{Limit: 1, ProgressTimeout: 300 * time.Millisecond})
	s.h.Advance(t, time.Second)
	select {
	case <-l.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("a lease with no progress mark was never declared lost")
	}
	wantEnd(t, "stalled lease's Err", l.Err(), eventkind.Stalled, "no progress mark")
	other := newGovernor(t, s.h.Open(t), governor.Options{Project: p})
	if _, err := other.Acquire(ctxT(t), "heavy", governor.AcquireOptions{Limit: 1}); !errors.Is(err, governor.ErrBusy) {
		t.Fatalf("acquire beside a stalled, unreleased lease: %v, want busy", err)
	}
	_ = l.Release()
	l2 := mustLease(t, other, "heavy", governor.AcquireOptions{Limit: 1})
	_ = l2.Release()
}
