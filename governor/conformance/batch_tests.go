package conformance

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/eventkind"
)

// batchRenew: a backend that renews leases in batches (BatchRenewer)
// gives each lease of a batch what its own Renew would: held leases on
// several resources (one with a waiter queued, which takes the full
// path) renewed, a lease taken over told who took it, a released one and
// an unknown one lost, a wrong secret refused — each its own result, none
// disturbing the others.
func (s *suite) batchRenew(t *testing.T) {
	b := s.h.Open(t)
	br, ok := b.(governor.BatchRenewer)
	if !ok {
		t.Skipf("%T renews one lease per call (no BatchRenewer)", b)
	}
	p := project()
	keyA, keyB, keyC := governor.Key{Project: p, Resource: "a"}, governor.Key{Project: p, Resource: "b"}, governor.Key{Project: p, Resource: "c"}
	a1, a2 := req(keyA, 2, 1, governor.Fail), req(keyA, 2, 1, governor.Fail)
	b1, b2 := req(keyB, 2, 1, governor.Fail), req(keyB, 2, 1, governor.Fail)
	c1 := req(keyC, 1, 1, governor.Fail)
	sum := sha1.Sum([]byte("the right secret"))
	c1.ID, c1.Secret = hex.EncodeToString(sum[:]), "the right secret"
	var first time.Time
	for _, r := range []governor.Request{a1, a2, b1, b2, c1} {
		res := mustAcquire(t, b, r, governor.Granted)
		if first.IsZero() {
			first = res.Expires
		}
	}
	mustAcquire(t, b, req(keyC, 1, 1, governor.Wait), governor.Queued) // keyC's renewals take the full path
	nu := req(keyB, 2, 1, governor.Fail)
	nu.Declaration.Session = "relay-9"
	if got, err := b.Acquire(ctxT(t), takeover(nu, keyB, b2.ID)); err != nil || got.Outcome != governor.Granted {
		t.Fatalf("Takeover = %+v, %v", got, err)
	}
	release(t, b, keyA, a2.ID)
	s.h.Advance(t, 20*time.Millisecond)
	rs := []governor.Renewal{
		{Key: keyA, ID: a1.ID, TTL: time.Minute},
		{Key: keyB, ID: b2.ID, TTL: time.Minute},                           // taken over
		{Key: keyC, ID: c1.ID, Secret: "a wrong secret", TTL: time.Minute}, // refused
		{Key: keyA, ID: a2.ID, TTL: time.Minute},                           // released
		{Key: keyB, ID: b1.ID, TTL: time.Minute},
		{Key: keyA, ID: "unknown", TTL: time.Minute},
		{Key: keyC, ID: c1.ID, Secret: c1.Secret, TTL: time.Minute},
	}
	got := br.RenewBatch(ctxT(t), rs)
	if len(got) != len(rs) {
		t.Fatalf("RenewBatch of %d leases returned %d results", len(rs), len(got))
	}
	for _, i := range []int{0, 4, 6} {
		if got[i].Err != nil || !got[i].Expires.After(first.Add(20*time.Second)) {
			t.Errorf("lease %d (%s %s): %+v; want renewed to about a minute from now", i, rs[i].Key, rs[i].ID, got[i])
		}
	}
	wantEnd(t, "taken-over lease in a batch", got[1].Err, eventkind.Takeover, "taken over by session relay-9")
	if !errors.Is(got[2].Err, governor.ErrNotOwner) {
		t.Errorf("wrong secret in a batch: %v; want ErrNotOwner", got[2].Err)
	}
	for _, i := range []int{3, 5} {
		if !errors.Is(got[i].Err, governor.ErrLeaseLost) {
			t.Errorf("lease %d (%s, not held) in a batch: %v; want ErrLeaseLost", i, rs[i].ID, got[i].Err)
		}
	}
	// The same as Renew says, lease by lease.
	for i, r := range rs {
		_, err := b.Renew(ctxT(t), governor.Renewal{Key: r.Key, ID: r.ID, Secret: r.Secret, Token: r.Token, TTL: r.TTL})
		if (err == nil) != (got[i].Err == nil) || errors.Is(err, governor.ErrLeaseLost) != errors.Is(got[i].Err, governor.ErrLeaseLost) ||
			errors.Is(err, governor.ErrNotOwner) != errors.Is(got[i].Err, governor.ErrNotOwner) {
			t.Errorf("lease %d: RenewBatch said %v, Renew says %v", i, got[i].Err, err)
		}
	}
	// Held leases carry the new expiry; nothing else moved.
	for _, k := range []governor.Key{keyA, keyB, keyC} {
		for _, h := range mustStatus(t, b, k).Holders {
			if h.LeaseID == nu.ID {
				continue
			}
			if !h.Expires.After(first.Add(20 * time.Second)) {
				t.Errorf("%s holder %s expires %v after the batch; want about a minute from now", k, h.LeaseID, h.Expires)
			}
		}
	}
	if st := mustStatus(t, b, keyC); len(st.Waiters) != 1 || st.Used != 1 {
		t.Errorf("keyC after the batch: %+v; want its holder and its waiter", st)
	}
}

// batchedHeartbeats: one Governor's leases heartbeat together (batched
// when the backend renews in batches), yet each learns its own loss: of
// twelve leases on seven resources, the one taken over and the one
// reclaimed end (Done, their own error), the other ten keep renewing.
func (s *suite) batchedHeartbeats(t *testing.T) {
	b := s.h.Open(t)
	// TTL 4 s (a renewal each 1.33 s): with 0.9 s, then 2 s, a loaded
	// machine (load 25 on 2 cores) let a lease's own deadline pass before
	// a renewal returned, and it ended plain lost.
	g := newGovernor(t, b, governor.Options{Project: project(), TTL: 4 * time.Second})
	var ls []*governor.Lease
	for i := 0; i < 12; i++ {
		res, limit := "pool", 6
		if i >= 6 {
			res, limit = "solo:"+string(rune('a'+i-6)), 1
		}
		l, err := g.Acquire(ctxT(t), res, governor.AcquireOptions{Limit: limit})
		if err != nil {
			t.Fatalf("lease %d on %s: %v", i, res, err)
		}
		ls = append(ls, l)
	}
	// renewedTwice waits, for every lease of ls at once, for two
	// renewals of its own (a renewal each 1.33 s: one lease after another
	// this took 12 × 1.33 s per round on a real server), each within
	// 20 s. fresh drops a renewal made before the call (folded into the
	// channel's one value), so that both are new.
	renewedTwice := func(ls []*governor.Lease, what string, fresh bool) {
		t.Helper()
		errs := make(chan string, len(ls))
		var wg sync.WaitGroup
		for _, l := range ls {
			if fresh {
				select {
				case <-l.Renewed():
				default:
				}
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for n := 0; n < 2; n++ {
					select {
					case <-l.Renewed():
					case <-l.Done():
						errs <- fmt.Sprintf("%s lease %s ended: %v", what, l.ID(), l.Err())
						return
					case <-time.After(20 * time.Second):
						errs <- fmt.Sprintf("%s lease %s did not renew within 20s", what, l.ID())
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for e := range errs {
			t.Fatal(e)
		}
	}
	renewedTwice(ls, "before", false)
	other := s.h.Open(t)
	taken, reclaimed := ls[2], ls[9]
	nu := req(taken.Key(), 6, 1, governor.Fail)
	nu.Declaration.Session = "relay-7"
	if got, err := other.Acquire(ctxT(t), takeover(nu, taken.Key(), taken.ID())); err != nil || got.Outcome != governor.Granted {
		t.Fatalf("Takeover = %+v, %v", got, err)
	}
	if ok, err := actChanged(other.Admin(ctxT(t), reclaimed.Key(), governor.Action{Kind: eventkind.Reclaimed, IDs: []string{reclaimed.ID()}, Token: reclaimed.Token()})); err != nil || !ok {
		t.Fatalf("Reclaim = %v, %v", ok, err)
	}
	for _, l := range []*governor.Lease{taken, reclaimed} {
		select {
		case <-l.Done():
		case <-time.After(20 * time.Second):
			t.Fatalf("lease %s on %s: Done not closed after it was removed", l.ID(), l.Resource())
		}
	}
	wantEnd(t, "the taken-over lease", taken.Err(), eventkind.Takeover, "taken over by session relay-7")
	if !errors.Is(reclaimed.Err(), governor.ErrLeaseLost) {
		t.Fatalf("the reclaimed lease: Err = %v, want ErrLeaseLost", reclaimed.Err())
	}
	var held []*governor.Lease
	for _, l := range ls {
		if l != taken && l != reclaimed {
			held = append(held, l)
		}
	}
	renewedTwice(held, "after the losses, a held", true)
	for _, l := range held {
		if err := l.Err(); err != nil {
			t.Fatalf("held lease %s on %s: Err = %v", l.ID(), l.Resource(), err)
		}
	}
	for _, l := range ls {
		if l == taken || l == reclaimed {
			continue
		}
		if err := l.Release(); err != nil {
			t.Fatalf("Release of held lease %s: %v", l.ID(), err)
		}
	}
}
