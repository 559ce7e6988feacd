package conformance

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/eventkind"
)

func (s *suite) grantWithinLimit(t *testing.T) {
	b, key := s.open(t, "provider:anthropic")
	var ids []string
	for i := 0; i < 3; i++ {
		r := req(key, 3, 1, governor.Fail)
		r.Declaration = governor.Declaration{Session: "sess", Host: "h1", HostID: "hid", PID: 42 + i, StartTime: 7, Command: "eval --x"}
		mustAcquire(t, b, r, governor.Granted)
		ids = append(ids, r.ID)
	}
	res := mustAcquire(t, b, req(key, 3, 1, governor.Fail), governor.Refused)
	if res.Status.Used != 3 || res.Status.Limit != 3 {
		t.Fatalf("refusal status used/limit = %d/%d, want 3/3", res.Status.Used, res.Status.Limit)
	}
	if len(res.Status.Holders) != 3 {
		t.Fatalf("refusal names %d holders, want 3", len(res.Status.Holders))
	}
	h := res.Status.Holders[0]
	if h.Session != "sess" || h.Host != "h1" || h.HostID != "hid" || h.StartTime != 7 || h.Command != "eval --x" || h.Weight != 1 {
		t.Fatalf("holder declaration not kept: %+v", h)
	}
	if h.Token <= 0 || h.Expires.IsZero() || h.AcquiredAt.IsZero() || h.Heartbeat.IsZero() {
		t.Fatalf("holder lacks token or times: %+v", h)
	}
	release(t, b, key, ids[1])
	mustAcquire(t, b, req(key, 3, 1, governor.Fail), governor.Granted)
	mustAcquire(t, b, req(key, 3, 1, governor.Fail), governor.Refused)
}

func (s *suite) weights(t *testing.T) {
	b, key := s.open(t, "gpu")
	mustAcquire(t, b, req(key, 5, 3, governor.Fail), governor.Granted)
	mustAcquire(t, b, req(key, 5, 3, governor.Fail), governor.Refused)
	mustAcquire(t, b, req(key, 5, 2, governor.Fail), governor.Granted)
	mustAcquire(t, b, req(key, 5, 1, governor.Fail), governor.Refused)
	if st := mustStatus(t, b, key); st.Used != 5 {
		t.Fatalf("used = %d, want 5", st.Used)
	}
}

// refusalQueueLen: a refusal and a queued acquire report the queue's
// length (Status.QueueLen), which busy messages quote.
func (s *suite) refusalQueueLen(t *testing.T) {
	b, key := s.open(t, "queue-len")
	mustAcquire(t, b, req(key, 1, 1, governor.Fail), governor.Granted)
	mustAcquire(t, b, req(key, 1, 1, governor.Wait), governor.Queued)
	if res := mustAcquire(t, b, req(key, 1, 1, governor.Wait), governor.Queued); res.Status.QueueLen() != 2 {
		t.Fatalf("second waiter: queue length %d, want 2", res.Status.QueueLen())
	}
	if res := mustAcquire(t, b, req(key, 1, 1, governor.Fail), governor.Refused); res.Status.QueueLen() != 2 {
		t.Fatalf("refusal: queue length %d, want 2", res.Status.QueueLen())
	}
}

func (s *suite) tooHeavy(t *testing.T) {
	b, key := s.open(t, "heavy")
	first := req(key, 2, 1, governor.Fail)
	mustAcquire(t, b, first, governor.Granted)
	// Another process believes the limit is 10 and asks for 8: the limit
	// in force is 2, so this can never be granted.
	_, err := b.Acquire(ctxT(t), req(key, 10, 8, governor.Wait))
	if !errors.Is(err, governor.ErrTooHeavy) {
		t.Fatalf("weight 8 against limit in force 2: err = %v, want ErrTooHeavy", err)
	}
	if st := mustStatus(t, b, key); len(st.Waiters) != 0 || st.Used != 1 {
		t.Fatalf("a refused heavy request left state behind: %+v", st)
	}
}

func (s *suite) releaseByIDOnly(t *testing.T) {
	b, key := s.open(t, "lifecycle")
	r := req(key, 1, 1, governor.Fail)
	mustAcquire(t, b, r, governor.Granted)
	wantNotHeld(t, b, key, "not-"+r.ID, "release by a stranger")
	if st := mustStatus(t, b, key); st.Used != 1 {
		t.Fatalf("a stranger's release freed the slot: used = %d", st.Used)
	}
	release(t, b, key, r.ID)
	wantNotHeld(t, b, key, r.ID, "second release")
	if st := mustStatus(t, b, key); st.Used != 0 {
		t.Fatalf("used after release = %d, want 0", st.Used)
	}
}

func (s *suite) renewNeverReacquires(t *testing.T) {
	b, key := s.open(t, "issue:2316")
	// Leases that outlive any pause of a loaded machine until the test
	// lets one expire (a 400 ms grant once expired before its renewal
	// on a Cluster under three suites at once).
	r := req(key, 1, 1, governor.Fail)
	r.TTL = time.Minute
	res := mustAcquire(t, b, r, governor.Granted)
	exp, err := b.Renew(ctxT(t), governor.Renewal{Key: key, ID: r.ID, Secret: "", Token: 0, TTL: 10 * time.Minute})
	if err != nil {
		t.Fatalf("Renew: %v", err)
	}
	if !exp.After(res.Expires) {
		t.Fatalf("renewed expiry %v not after %v", exp, res.Expires)
	}
	// ttl 0 keeps the lease's own (10 minutes since the renewal above,
	// not the grant's minute).
	before := mustStatus(t, b, key).Holders[0]
	kept, err := b.Renew(ctxT(t), governor.Renewal{Key: key, ID: r.ID, Secret: "", Token: 0, TTL: 0})
	if err != nil {
		t.Fatalf("Renew with ttl 0: %v", err)
	}
	if got := kept.Sub(before.Expires); got < -100*time.Millisecond || got > 5*time.Minute {
		t.Fatalf("Renew with ttl 0 moved the expiry by %v, want about the lease's own 10m from now (was %v)", got, before.Expires)
	}
	if _, err := b.Renew(ctxT(t), governor.Renewal{Key: key, ID: "unknown", Secret: "", Token: 0, TTL: time.Second}); !errors.Is(err, governor.ErrLeaseLost) {
		t.Fatalf("renew of unknown lease: err = %v, want ErrLeaseLost", err)
	}
	// Let it expire: a renewal must not bring it back.
	if _, err := b.Renew(ctxT(t), governor.Renewal{Key: key, ID: r.ID, Secret: "", Token: 0, TTL: 400 * time.Millisecond}); err != nil {
		t.Fatalf("Renew: %v", err)
	}
	s.h.Advance(t, time.Second)
	_, err = b.Renew(ctxT(t), governor.Renewal{Key: key, ID: r.ID, Secret: "", Token: 0, TTL: 10 * time.Second})
	wantEnd(t, "renew after expiry", err, eventkind.Expired, "expired")
	if st := mustStatus(t, b, key); st.Used != 0 || len(st.Holders) != 0 {
		t.Fatalf("renew re-acquired an expired lease: %+v", st)
	}
}

// expiryFreesSlot: a lease that is not renewed frees its slot at its
// expiry. On a real server's clock its TTL is 3 s, so that it still
// holds the slot when the checks before its expiry run on a loaded
// machine (they take well under 400 ms idle, not always under load).
func (s *suite) expiryFreesSlot(t *testing.T) {
	ttl := 400 * time.Millisecond
	if s.h.RealTime {
		ttl = 3 * time.Second
	}
	b, key := s.open(t, "run")
	r := req(key, 1, 1, governor.Fail)
	r.TTL = ttl
	mustAcquire(t, b, r, governor.Granted)
	mustAcquire(t, b, req(key, 1, 1, governor.Fail), governor.Refused)
	if st := mustStatus(t, b, key); len(st.Holders) != 1 {
		t.Fatalf("holders = %d, want 1", len(st.Holders))
	}
	s.h.Advance(t, ttl+600*time.Millisecond)
	if st := mustStatus(t, b, key); len(st.Holders) != 0 || st.Used != 0 {
		t.Fatalf("status lists an expired holder: %+v", st)
	}
	mustAcquire(t, b, req(key, 1, 1, governor.Fail), governor.Granted)
	wantNotHeld(t, b, key, r.ID, "release of the expired lease")
	if st := mustStatus(t, b, key); st.Used != 1 {
		t.Fatalf("the expired holder's release freed the new holder's slot: used = %d", st.Used)
	}
}

// earliestExpiryHonoured: a lease granted or renewed with a shorter TTL
// than those already held expires on its own time, whatever order the
// leases came in (backends may keep a bound on the earliest expiry to skip
// the expiry scan; every grant and renewal must lower it).
func (s *suite) earliestExpiryHonoured(t *testing.T) {
	b, key := s.open(t, "gpu")
	// New: each id is sent for the first time, as Governor.Acquire says
	// (a backend may take a faster path for those).
	long := func() governor.Request {
		r := req(key, 3, 1, governor.Fail)
		r.TTL, r.New = 30*time.Second, true
		return r
	}
	a := long()
	mustAcquire(t, b, a, governor.Granted)
	alone := func(what string, gone governor.Request) {
		t.Helper()
		s.h.Advance(t, time.Second)
		if _, err := b.Renew(ctxT(t), governor.Renewal{Key: key, ID: gone.ID, Secret: "", Token: 0, TTL: 0}); !errors.Is(err, governor.ErrLeaseLost) {
			t.Fatalf("%s: renew after its expiry: err = %v, want ErrLeaseLost", what, err)
		}
		st := mustStatus(t, b, key)
		if st.Used != 1 || len(st.Holders) != 1 || st.Holders[0].LeaseID != a.ID {
			t.Fatalf("%s: after it expired: used %d, holders %+v; want only %s", what, st.Used, st.Holders, a.ID)
		}
	}
	short := req(key, 3, 1, governor.Fail)
	short.TTL, short.New = 400*time.Millisecond, true
	mustAcquire(t, b, short, governor.Granted)
	alone("a lease granted with a shorter TTL", short)

	c := long()
	mustAcquire(t, b, c, governor.Granted)
	if _, err := b.Renew(ctxT(t), governor.Renewal{Key: key, ID: c.ID, Secret: "", Token: 0, TTL: 400 * time.Millisecond}); err != nil {
		t.Fatalf("Renew: %v", err)
	}
	alone("a lease renewed with a shorter TTL", c)

	mustAcquire(t, b, req(key, 3, 2, governor.Fail), governor.Granted)
	release(t, b, key, a.ID)
}

func (s *suite) tokensIncrease(t *testing.T) {
	b := s.h.Open(t)
	other := s.h.Open(t)
	key := governor.Key{Project: project(), Resource: "seq"}
	var last int64
	check := func(tok int64) {
		t.Helper()
		if tok <= last {
			t.Fatalf("token %d not above previous %d", tok, last)
		}
		last = tok
	}
	for i := 0; i < 20; i++ {
		be := b
		if i%2 == 1 {
			be = other
		}
		r := req(key, 1, 1, governor.Fail)
		// Only a lease left to expire has a short TTL: a released one
		// once expired first, at load on a real clock ("lease not held").
		r.TTL = time.Minute
		if i%5 == 4 {
			r.TTL = 300 * time.Millisecond
		}
		res := mustAcquire(t, be, r, governor.Granted)
		check(res.Token)
		if i%5 == 4 {
			s.h.Advance(t, 500*time.Millisecond) // expire instead of release
			continue
		}
		release(t, be, key, r.ID)
	}
	// Hand-off grants take tokens too.
	h := req(key, 1, 1, governor.Fail)
	check(mustAcquire(t, b, h, governor.Granted).Token)
	w := req(key, 1, 1, governor.Wait)
	mustAcquire(t, b, w, governor.Queued)
	release(t, b, key, h.ID)
	check(mustAcquire(t, b, w, governor.Granted).Token)
}

// handedGrant: a waiter granted by a release of its own backend (as a
// waiter of the releasing process) is granted as one of another: told,
// and its Acquire returns the grant, with a later token, an expiry a TTL
// after the release, and, when the backend says the release made it
// (Result.Sent), a time between the release's call and its return. The
// grant is the backend's: an Acquire again claims the same token, and
// Status lists it. A waiter whose Notify stopped before the release
// claims its grant by an Acquire all the same.
func (s *suite) handedGrant(t *testing.T) {
	b := s.h.Open(t)
	key := governor.Key{Project: project(), Resource: "handed"}
	for _, watched := range []bool{true, false} {
		h := req(key, 1, 1, governor.Fail)
		held := mustAcquire(t, b, h, governor.Granted)
		w := req(key, 1, 1, governor.Wait)
		ch, stop := b.Notify(ctxT(t), key, w.ID)
		mustAcquire(t, b, w, governor.Queued)
		if !watched {
			stop()
		}
		before := time.Now()
		if err := b.Release(ctxT(t), key, h.ID, h.Secret); err != nil {
			t.Fatal(err)
		}
		after := time.Now()
		if watched {
			select {
			case <-ch:
			case <-time.After(10 * time.Second):
				t.Fatal("a waiter of the releasing backend was not told of its grant")
			}
		}
		w.New = false
		got := mustAcquire(t, b, w, governor.Granted)
		stop()
		// Expiries are the store's time, which a harness's clock (Advance)
		// may keep apart from ours: the handed grant's is compared with the
		// holder's, granted a TTL before the release, on the same clock.
		if got.Token <= held.Token || got.Expires.Before(held.Expires) {
			t.Fatalf("watched %v: the handed grant: token %d after %d, expires %v; want a later token, expiring a TTL (%v) after the release, not before the holder's %v",
				watched, got.Token, held.Token, got.Expires, w.TTL, held.Expires)
		}
		if !got.Sent.IsZero() && (got.Sent.Before(before) || got.Sent.After(after)) {
			t.Fatalf("watched %v: the handed grant says it was made by a call sent at %v; the release ran from %v to %v",
				watched, got.Sent, before, after)
		}
		again := mustAcquire(t, b, w, governor.Granted)
		if again.Token != got.Token || !again.Sent.IsZero() {
			t.Fatalf("watched %v: claimed again: token %d, sent %v; want the handed grant's token %d, claimed by this call",
				watched, again.Token, again.Sent, got.Token)
		}
		st := mustStatus(t, b, key)
		if len(st.Holders) != 1 || st.Holders[0].LeaseID != w.ID || st.Holders[0].Token != got.Token {
			t.Fatalf("watched %v: holders %+v; want the waiter alone, with token %d", watched, st.Holders, got.Token)
		}
		release(t, b, key, w.ID)
	}
}

func (s *suite) fifoHandOff(t *testing.T) {
	b := s.h.Open(t)
	other := s.h.Open(t)
	key := governor.Key{Project: project(), Resource: "heavy"}
	h := req(key, 1, 1, governor.Fail)
	mustAcquire(t, b, h, governor.Granted)
	var ws []governor.Request
	var notes []<-chan struct{}
	for i := 0; i < 4; i++ {
		be := b
		if i%2 == 1 {
			be = other
		}
		w := req(key, 1, 1, governor.Wait)
		ch, stop := be.Notify(ctxT(t), key, w.ID)
		t.Cleanup(stop)
		notes = append(notes, ch)
		res := mustAcquire(t, be, w, governor.Queued)
		if res.Position != i+1 {
			t.Fatalf("waiter %d position = %d, want %d", i, res.Position, i+1)
		}
		ws = append(ws, w)
	}
	// A fail-mode newcomer does not jump the queue even when a slot frees.
	holder := h.ID
	for i, w := range ws {
		if err := b.Release(ctxT(t), key, holder, ""); err != nil {
			t.Fatalf("release %d: %v", i, err)
		}
		// Only the head is told, and only the head is granted.
		select {
		case <-notes[i]:
		case <-time.After(10 * time.Second):
			t.Fatalf("waiter %d not notified of its grant", i)
		}
		for j := i + 1; j < len(ws); j++ {
			select {
			case <-notes[j]:
				t.Fatalf("waiter %d woken by the grant to waiter %d", j, i)
			default:
			}
		}
		mustAcquire(t, b, req(key, 1, 1, governor.Fail), governor.Refused)
		be := b
		if i%2 == 1 {
			be = other
		}
		mustAcquire(t, be, w, governor.Granted)
		for j := i + 1; j < len(ws); j++ {
			res := mustAcquire(t, b, ws[j], governor.Queued)
			if res.Position != j-i {
				t.Fatalf("waiter %d position = %d, want %d", j, res.Position, j-i)
			}
		}
		holder = w.ID
	}
}

func (s *suite) headOfLineBlocks(t *testing.T) {
	b, key := s.open(t, "mem")
	h := req(key, 2, 1, governor.Fail)
	mustAcquire(t, b, h, governor.Granted)
	big := req(key, 2, 2, governor.Wait)
	mustAcquire(t, b, big, governor.Queued)
	// One slot is free, but the heavy waiter came first: nobody overtakes.
	small := req(key, 2, 1, governor.Wait)
	if res := mustAcquire(t, b, small, governor.Queued); res.Position != 2 {
		t.Fatalf("small waiter position = %d, want 2", res.Position)
	}
	mustAcquire(t, b, req(key, 2, 1, governor.Fail), governor.Refused)
	release(t, b, key, h.ID)
	mustAcquire(t, b, big, governor.Granted)
	mustAcquire(t, b, small, governor.Queued)
	release(t, b, key, big.ID)
	mustAcquire(t, b, small, governor.Granted)
}

func (s *suite) deadWaiterSkipped(t *testing.T) {
	b, key := s.open(t, "heavy")
	h := req(key, 1, 1, governor.Fail)
	h.TTL = time.Minute
	mustAcquire(t, b, h, governor.Granted)
	dead := req(key, 1, 1, governor.Wait)
	dead.QueueTTL = 300 * time.Millisecond
	mustAcquire(t, b, dead, governor.Queued)
	live := req(key, 1, 1, governor.Wait)
	live.QueueTTL = time.Minute
	mustAcquire(t, b, live, governor.Queued)
	s.h.Advance(t, time.Second) // the dead waiter never refreshes
	release(t, b, key, h.ID)
	mustAcquire(t, b, live, governor.Granted)
	st := mustStatus(t, b, key)
	if len(st.Holders) != 1 || st.Holders[0].LeaseID != live.ID || len(st.Waiters) != 0 {
		t.Fatalf("after the dead waiter expired: %+v", st)
	}
}

func (s *suite) cancel(t *testing.T) {
	b, key := s.open(t, "plan")
	h := req(key, 1, 1, governor.Fail)
	mustAcquire(t, b, h, governor.Granted)
	w1 := req(key, 1, 1, governor.Wait)
	w2 := req(key, 1, 1, governor.Wait)
	mustAcquire(t, b, w1, governor.Queued)
	mustAcquire(t, b, w2, governor.Queued)
	if err := b.Cancel(ctxT(t), key, w1.ID, ""); err != nil {
		t.Fatal(err)
	}
	if res := mustAcquire(t, b, w2, governor.Queued); res.Position != 1 {
		t.Fatalf("after cancel, position = %d, want 1", res.Position)
	}
	// w2 is granted by the release, then cancels before claiming: the
	// grant goes back.
	release(t, b, key, h.ID)
	if err := b.Cancel(ctxT(t), key, w2.ID, ""); err != nil {
		t.Fatal(err)
	}
	if st := mustStatus(t, b, key); st.Used != 0 || len(st.Waiters) != 0 || len(st.Holders) != 0 {
		t.Fatalf("cancel left state behind: %+v", st)
	}
	if err := b.Cancel(ctxT(t), key, "unknown", ""); err != nil {
		t.Fatalf("cancel of unknown id: %v", err)
	}
}

// wantEnd checks that err is a *governor.LeaseLostError (so ErrLeaseLost)
// whose end is an event of kind and whose reason contains reason.
func wantEnd(t *testing.T, what string, err error, kind, reason string) *governor.LeaseLostError {
	t.Helper()
	var lost *governor.LeaseLostError
	if !errors.Is(err, governor.ErrLeaseLost) || !errors.As(err, &lost) || lost.End.Kind != kind ||
		!strings.Contains(lost.Reason(), reason) || !strings.Contains(err.Error(), reason) {
		t.Fatalf("%s: %v; want a *LeaseLostError for a %s event saying %q", what, err, kind, reason)
	}
	return lost
}

func (s *suite) reclaim(t *testing.T) {
	b, key := s.open(t, "merge")
	h := req(key, 1, 1, governor.Fail)
	res := mustAcquire(t, b, h, governor.Granted)
	if ok, err := actChanged(b.Admin(ctxT(t), key, governor.Action{Kind: eventkind.Reclaimed, IDs: []string{h.ID}, Token: res.Token + 1})); err != nil || ok {
		t.Fatalf("reclaim with a wrong token = %v, %v; want false", ok, err)
	}
	if ok, err := actChanged(b.Admin(ctxT(t), key, governor.Action{Kind: eventkind.Reclaimed, IDs: []string{"unknown"}, Token: res.Token})); err != nil || ok {
		t.Fatalf("reclaim of unknown lease = %v, %v; want false", ok, err)
	}
	if ok, err := actChanged(b.Admin(ctxT(t), key, governor.Action{Kind: eventkind.Reclaimed, IDs: []string{h.ID}, Token: res.Token})); err != nil || !ok {
		t.Fatalf("reclaim = %v, %v; want true", ok, err)
	}
	_, err := b.Renew(ctxT(t), governor.Renewal{Key: key, ID: h.ID, Secret: "", Token: 0, TTL: time.Minute})
	wantEnd(t, "renew after reclaim", err, eventkind.Reclaimed, "reclaimed: owner dead")
	st := mustStatus(t, b, key)
	if st.Used != 0 || st.Counters.ReclaimedDead != 1 {
		t.Fatalf("after reclaim: used %d, reclaimed dead %d; want 0, 1", st.Used, st.Counters.ReclaimedDead)
	}
}

func (s *suite) status(t *testing.T) {
	b, key := s.open(t, "provider:openai")
	if st := mustStatus(t, b, key); st.Limit != 0 || st.Used != 0 || len(st.Holders) != 0 {
		t.Fatalf("status of an unused resource: %+v", st)
	}
	h := req(key, 2, 2, governor.Fail)
	h.Declaration.Session = "holder"
	mustAcquire(t, b, h, governor.Granted)
	w1 := req(key, 2, 1, governor.Wait)
	w1.Declaration.Session = "first"
	w2 := req(key, 2, 2, governor.Wait)
	w2.Declaration.Session = "second"
	mustAcquire(t, b, w1, governor.Queued)
	mustAcquire(t, b, w2, governor.Queued)
	st := mustStatus(t, b, key)
	if st.Limit != 2 || st.Used != 2 || len(st.Holders) != 1 || st.Holders[0].Session != "holder" || st.Holders[0].Weight != 2 {
		t.Fatalf("status holders: %+v", st)
	}
	if len(st.Waiters) != 2 || st.Waiters[0].Session != "first" || st.Waiters[1].Session != "second" || st.Waiters[1].Weight != 2 {
		t.Fatalf("status waiters not in FIFO order with declarations: %+v", st.Waiters)
	}
	if st.Now.IsZero() || st.Waiters[0].EnqueuedAt.IsZero() {
		t.Fatalf("status lacks times: %+v", st)
	}
	// Reading changes nothing.
	again := mustStatus(t, b, key)
	if again.Used != st.Used || len(again.Waiters) != 2 || again.Counters != st.Counters {
		t.Fatalf("status changed state: %+v then %+v", st, again)
	}
	names, err := b.Resources(ctxT(t), key.Project)
	if err != nil || len(names) != 1 || names[0] != key.Resource {
		t.Fatalf("Resources = %v, %v; want [%s]", names, err, key.Resource)
	}
}

func (s *suite) limitDrift(t *testing.T) {
	b, key := s.open(t, "run")
	h := req(key, 2, 1, governor.Fail)
	mustAcquire(t, b, h, governor.Granted)
	// Another process was configured with limit 5: the limit in force
	// stays 2 while the resource is busy.
	mustAcquire(t, b, req(key, 5, 1, governor.Fail), governor.Granted)
	res := mustAcquire(t, b, req(key, 5, 1, governor.Fail), governor.Refused)
	if res.Status.Limit != 2 || res.Status.DriftLimit != 5 {
		t.Fatalf("limit/drift = %d/%d, want 2/5", res.Status.Limit, res.Status.DriftLimit)
	}
	if st := mustStatus(t, b, key); st.Limit != 2 || st.DriftLimit != 5 {
		t.Fatalf("status limit/drift = %d/%d, want 2/5", st.Limit, st.DriftLimit)
	}
	evs, err := b.Events(ctxT(t), key, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	drifts := 0
	for _, e := range evs {
		if e.Kind == eventkind.Drift {
			drifts++
		}
	}
	if drifts != 1 {
		t.Fatalf("%d drift events for one disagreement, want 1: %+v", drifts, evs)
	}
}

func (s *suite) projectsIsolated(t *testing.T) {
	b := s.h.Open(t)
	k1 := governor.Key{Project: project(), Resource: "heavy"}
	k2 := governor.Key{Project: project(), Resource: "heavy"}
	mustAcquire(t, b, req(k1, 1, 1, governor.Fail), governor.Granted)
	mustAcquire(t, b, req(k2, 1, 1, governor.Fail), governor.Granted)
	mustAcquire(t, b, req(k1, 1, 1, governor.Fail), governor.Refused)
}

func (s *suite) counters(t *testing.T) {
	b, key := s.open(t, "count")
	h := req(key, 1, 1, governor.Fail)
	mustAcquire(t, b, h, governor.Granted)
	mustAcquire(t, b, req(key, 1, 1, governor.Fail), governor.Refused)
	w := req(key, 1, 1, governor.Wait)
	mustAcquire(t, b, w, governor.Queued)
	release(t, b, key, h.ID)
	mustAcquire(t, b, w, governor.Granted)
	if err := b.Record(ctxT(t), key, governor.Event{Kind: eventkind.Lost, LeaseID: "some-lease", Token: 1, Detail: "a test"}); err != nil {
		t.Fatal(err)
	}
	c := mustStatus(t, b, key).Counters
	want := governor.Counters{Acquired: 2, Busy: 1, Waited: 1, Released: 1, Lost: 1}
	if c != want {
		t.Fatalf("counters = %+v, want %+v", c, want)
	}
}
