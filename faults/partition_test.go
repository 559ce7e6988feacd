package faults_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/governor-dev/governor/faults"
	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/leasetest"
	"github.com/governor-dev/governor/internal/redistest"
)

// spanLog collects the spans of protected work of in-process holders.
type spanLog struct {
	mu    sync.Mutex
	spans []span
	wg    sync.WaitGroup
}

// work does protected work under l until the lease is lost or stop
// closes: 10ms units, each started only after checking the lease.
func (s *spanLog) work(l *governor.Lease, who string, stop <-chan struct{}) {
	s.wg.Go(func() {
		for {
			checked := monoNow()
			if l.Err() != nil {
				return
			}
			time.Sleep(10 * time.Millisecond)
			s.mu.Lock()
			s.spans = append(s.spans, span{start: checked, end: monoNow(), weight: l.Weight(), who: who})
			s.mu.Unlock()
			select {
			case <-stop:
				return
			default:
			}
		}
	})
}

func (s *spanLog) all() []span {
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]span(nil), s.spans...)
}

func newProxy(t *testing.T, target string) *faults.Proxy {
	t.Helper()
	p, err := faults.NewProxy(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// acquireAsync acquires in Wait mode in a goroutine; the result arrives
// on the channel with the instant of the grant.
type grant struct {
	l   *governor.Lease
	err error
	at  int64
}

// declaredLost waits (within at most) for holder's lease l to be
// declared lost, and returns the instant it saw it.
func declaredLost(t *testing.T, l *governor.Lease, within time.Duration, holder string) int64 {
	t.Helper()
	select {
	case <-l.Done():
	case <-time.After(within):
		t.Fatalf("%s never declared its lease lost", holder)
	}
	at := monoNow()
	if !errors.Is(l.Err(), governor.ErrLeaseLost) {
		t.Fatalf("Err %v, want ErrLeaseLost", l.Err())
	}
	return at
}

// grantedAfter waits (30s at most) for the waiter's grant, which must
// come after lostAt, when holder declared its lease lost.
func grantedAfter(t *testing.T, waiter <-chan grant, lostAt int64, holder string) grant {
	t.Helper()
	var w grant
	select {
	case w = <-waiter:
	case <-time.After(30 * time.Second):
		t.Fatalf("the waiter was never granted %s's slot", holder)
	}
	if w.err != nil {
		t.Fatal(w.err)
	}
	if w.at <= lostAt {
		t.Fatalf("the waiter was granted before %s declared its lease lost", holder)
	}
	return w
}

func acquireAsync(g *governor.Governor, resource string, o governor.AcquireOptions, d time.Duration) <-chan grant {
	ch := make(chan grant, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		o.Mode = governor.Wait
		l, err := g.Acquire(ctx, resource, o)
		ch <- grant{l, err, monoNow()}
	}()
	return ch
}

// Scenario 2: the holder is cut off from Redis (its connections stay
// open but nothing passes) for longer than the TTL. It declares the lease
// lost on its own clock while the server still lists it; the waiter is
// granted only after that; after healing, the requests held in the
// partition (renewals, the release of the lost lease) reach the server
// and change nothing: one holder, the waiter.
func TestPartitionedHolder(t *testing.T) {
	t.Parallel()
	partitionScenario(t, redisOptions)
}

// The same with go-redis's default options, as cmd/governor builds its
// client: a command is then bounded by ReadTimeout (5s), not by its
// context, and the heartbeat, blocked in a renewal, does not watch the
// lease's local deadline meanwhile. The waiter is granted while the
// holder's Done is still open.
func TestPartitionDefaultClient(t *testing.T) {
	t.Parallel()
	partitionScenario(t, func(addr string) *redis.Options { return &redis.Options{Addr: addr} })
}

func partitionScenario(t *testing.T, holderOptions func(addr string) *redis.Options) {
	s := redistest.Start(t)
	p := newProxy(t, s.Addr)
	project := uniq("partition")
	key := governor.Key{Project: project, Resource: "heavy"}
	direct := backend(t, client(t, s.Addr))
	// TTL 3s: the holder must notice within its 600ms margin, even on a
	// loaded machine.
	gh := newGovernorWith(t, holderOptions(p.Addr()), governor.Options{Project: project, TTL: 3 * time.Second, QueueTTL: time.Second, Session: "holder"})
	gw := newGovernor(t, s.Addr, governor.Options{Project: project, TTL: 3 * time.Second, QueueTTL: time.Second, Session: "waiter"})

	lh := leasetest.HoldHeavy(t, gh)
	var log spanLog
	stop := make(chan struct{})
	log.work(lh, "holder", stop)
	waiter := acquireAsync(gw, "heavy", governor.AcquireOptions{Limit: 1}, time.Minute)
	time.Sleep(1500 * time.Millisecond) // a few renewals through the proxy
	if lh.Err() != nil {
		t.Fatalf("lost before the partition: %v", lh.Err())
	}

	p.Blackhole()
	partitioned := time.Now()
	lostAt := declaredLost(t, lh, 15*time.Second, "the partitioned holder")
	// Declared on its own clock, before the server let the lease go.
	if st := status(t, direct, key); !holds(st, lh.ID()) {
		t.Fatalf("when the holder declared the loss the server no longer listed it: %+v", st.Holders)
	}
	t.Logf("lease declared lost %v into the partition", time.Since(partitioned).Round(time.Millisecond))

	w := grantedAfter(t, waiter, lostAt, "the partitioned holder")
	if w.l.Token() <= lh.Token() {
		t.Fatalf("token %d after %d", w.l.Token(), lh.Token())
	}
	log.work(w.l, "waiter", stop)

	// Partition longer than the TTL, then heal: what was held in it is
	// delivered now.
	time.Sleep(time.Until(partitioned.Add(4 * time.Second)))
	p.Heal()
	time.Sleep(2 * time.Second)
	st := status(t, direct, key)
	if len(st.Holders) != 1 || !holds(st, w.l.ID()) {
		t.Fatalf("after healing: holders %+v, want only the waiter", st.Holders)
	}
	if w.l.Err() != nil {
		t.Fatalf("the waiter's lease: %v", w.l.Err())
	}
	close(stop)
	checkSpans(t, log.all(), 1)
	if err := w.l.Release(); err != nil {
		t.Fatalf("the waiter's release: %v (released by someone else?)", err)
	}
	if err := lh.Release(); !errors.Is(err, governor.ErrLeaseLost) {
		t.Fatalf("release of the lost lease: %v, want ErrLeaseLost", err)
	}
	if st := status(t, direct, key); len(st.Holders) != 0 || st.Counters.Lost != 1 {
		t.Fatalf("at the end: holders %+v counters %+v", st.Holders, st.Counters)
	}
}

// Connections cut (reset) over and over, while a holder heartbeats: the
// client reconnects at once, so the lease is never lost, and a waiter
// behind it, on the same proxy, is served when it is released. The
// TTL (6 s, a heartbeat every 2 s) leaves a renewal starved on a
// loaded machine its margin: with 2 s, one CI run at load 30 lost the
// lease while nothing but the load was in its way.
func TestConnectionsCut(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	p := newProxy(t, s.Addr)
	project := uniq("cut")
	key := governor.Key{Project: project, Resource: "heavy"}
	direct := backend(t, client(t, s.Addr))
	gh := newGovernor(t, p.Addr(), governor.Options{Project: project, TTL: 6 * time.Second, QueueTTL: 3 * time.Second, Session: "holder"})
	gw := newGovernor(t, p.Addr(), governor.Options{Project: project, TTL: 6 * time.Second, QueueTTL: 3 * time.Second, Session: "waiter"})
	lh := leasetest.HoldHeavy(t, gh)
	exp := lh.Expires()
	waiter := acquireAsync(gw, "heavy", governor.AcquireOptions{Limit: 1}, time.Minute)
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(300 * time.Millisecond) {
		p.Cut()
	}
	if lh.Err() != nil {
		t.Fatalf("the lease was lost to connection resets: %v", lh.Err())
	}
	if !lh.Expires().After(exp.Add(time.Second)) {
		t.Fatalf("expiry %v not renewed past %v", lh.Expires(), exp)
	}
	if st := status(t, direct, key); !holds(st, lh.ID()) || len(st.Waiters) != 1 {
		t.Fatalf("holders %+v waiters %+v", st.Holders, st.Waiters)
	}
	if err := lh.Release(); err != nil {
		t.Fatal(err)
	}
	select {
	case w := <-waiter:
		if w.err != nil {
			t.Fatal(w.err)
		}
		if err := w.l.Release(); err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the waiter was not served after the holder released")
	}
}
