package faults_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/leasetest"
	"github.com/governor-dev/governor/internal/redistest"
)

// Scenario 3: redis-server restarted without persistence while a lease is
// held and three waiters are queued, each process on its own Governor.
// The holder's next renewal finds nothing and Done closes; the waiters
// ride out the outage, re-queue and are all served, with tokens above
// every token from before the restart (tokens mix in the server's time);
// the fenced store never accepts a write of the old holder after a new
// one wrote; nothing hangs and no governor goroutine is left.
//
// Without persistence the server forgets the holder: without the
// quarantine (redisbackend.LossQuarantine, on here) a waiter could be
// granted before the old holder's next renewal tells it, and for up to a
// heartbeat two processes would believe they hold the slot, protected
// only by fencing. The test measures any such window and bounds it by
// TTL - margin (the holder's local deadline); TestRedisLossQuarantine
// checks the work itself never overlaps.
func TestRedisRestart(t *testing.T) {
	s := redistest.Start(t)
	project := uniq("restart")
	key := governor.Key{Project: project, Resource: "heavy"}
	f := newFence(t)
	const ttl = 2 * time.Second
	opts := func(who string) governor.Options {
		return governor.Options{Project: project, TTL: ttl, QueueTTL: time.Second, Session: who}
	}
	var closers []func()
	gov := func(who string) *governor.Governor {
		rdb := client(t, s.Addr)
		b := backend(t, rdb)
		g, err := governor.New(b, opts(who))
		if err != nil {
			t.Fatal(err)
		}
		closers = append(closers, func() { g.Close() })
		return g
	}

	gh := gov("old")
	lh := leasetest.HoldHeavy(t, gh)
	// fencedWork writes through the fence every 20ms while l reads as
	// held, for d or until refused; it reports whether it was refused.
	var wg sync.WaitGroup
	fencedWork := func(l *governor.Lease, who string, d time.Duration) {
		wg.Go(func() {
			for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
				checked := monoNow()
				if l.Err() != nil {
					return
				}
				if ok, _ := f.write(l.Token(), who, checked); !ok {
					return
				}
			}
		})
	}
	fencedWork(lh, "old", time.Minute)

	type served struct {
		who string
		l   *governor.Lease
		err error
		at  int64
	}
	results := make(chan served, 3)
	for _, who := range []string{"w1", "w2", "w3"} {
		g := gov(who)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			l, err := g.Acquire(ctx, "heavy", governor.AcquireOptions{Limit: 1, Mode: governor.Wait})
			results <- served{who, l, err, monoNow()}
		}()
	}
	direct := backend(t, client(t, s.Addr))
	eventually(t, 20*time.Second, "three waiters queued", func() bool { return len(status(t, direct, key).Waiters) == 3 })

	restartAt := monoNow()
	restartLosing(t, s, lh)
	lostAt := monoNow()
	if !errors.Is(lh.Err(), governor.ErrLeaseLost) {
		t.Fatalf("holder: %v, want ErrLeaseLost", lh.Err())
	}
	t.Logf("the holder learned of the loss %v after the restart began", time.Duration(lostAt-restartAt).Round(time.Millisecond))

	// Each waiter is served in turn: it works under the fence, then
	// releases.
	firstGrant := int64(0)
	for range 3 {
		var r served
		select {
		case r = <-results:
		case <-time.After(45 * time.Second):
			t.Fatal("a waiter was not served after the restart")
		}
		if r.err != nil {
			t.Fatalf("waiter %s: %v", r.who, r.err)
		}
		if firstGrant == 0 {
			firstGrant = r.at
		}
		if r.l.Token() <= lh.Token() {
			t.Fatalf("waiter %s got token %d after the restart, not above %d from before", r.who, r.l.Token(), lh.Token())
		}
		fencedWork(r.l, r.who, 200*time.Millisecond)
		wg.Wait()
		if err := r.l.Release(); err != nil {
			t.Fatalf("waiter %s release: %v", r.who, err)
		}
	}
	wg.Wait()
	f.check(t)
	var oldAfter, newWrites int
	for _, w := range f.writes() {
		if w.who != "old" && w.accepted {
			newWrites++
		}
		if w.who == "old" && w.accepted && newWrites > 0 {
			oldAfter++
		}
	}
	if oldAfter > 0 || newWrites == 0 {
		t.Fatalf("fenced store: %d writes of the old holder accepted after a new holder's; %d new writes", oldAfter, newWrites)
	}
	if overlap := time.Duration(lostAt - firstGrant); overlap > 0 {
		t.Logf("for %v a waiter held the slot while the old holder's lease still read as held (server restarted without persistence; fencing refused the old holder)", overlap.Round(time.Millisecond))
		if overlap > ttl-ttl/5 {
			t.Fatalf("double holding for %v, beyond the holder's local deadline (TTL - margin)", overlap)
		}
	}
	if st := status(t, direct, key); len(st.Holders) != 0 || len(st.Waiters) != 0 {
		t.Fatalf("at the end: holders %+v waiters %+v", st.Holders, st.Waiters)
	}
	_ = lh.Release()
	for _, c := range closers {
		c()
	}
	direct.Close()
	noLeaks(t)
}

// restartLosing restarts s and waits until lh, held on it, learns that
// the restart lost its lease.
func restartLosing(t *testing.T, s *redistest.Server, lh *governor.Lease) {
	t.Helper()
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lh.Done():
	case <-time.After(15 * time.Second):
		t.Fatal("the holder did not learn that the restart lost its lease")
	}
}
