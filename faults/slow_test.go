package faults_test

import (
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/leasetest"
	"github.com/governor-dev/governor/internal/redistest"
)

// Scenario 4: a slow Redis. With 200ms added each way (400ms round trip)
// heartbeats keep a lease alive: its expiry moves on. That holder has a
// 15s TTL renewed every second, so only a renewal that never comes back
// loses it, not a loaded machine (a 3s TTL, whose margin left 1.4s for a
// 400ms round trip, was lost at load 20-30). With 2s each way a second
// holder's 3s TTL cannot be renewed before its local deadline: it
// declares the loss on its own clock while the server still lists the
// lease (late renewals even extend it there), and the waiter is granted
// only after that.
func TestSlowRedis(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	p := newProxy(t, s.Addr)
	project := uniq("slow")
	key := governor.Key{Project: project, Resource: "heavy"}
	direct := backend(t, client(t, s.Addr))
	gk := newGovernor(t, p.Addr(), governor.Options{Project: project, TTL: 15 * time.Second, Heartbeat: time.Second, Session: "slow-kept"})
	gh := newGovernor(t, p.Addr(), governor.Options{Project: project, TTL: 3 * time.Second, Session: "slow-holder"})
	gw := newGovernor(t, s.Addr, governor.Options{Project: project, TTL: 3 * time.Second, QueueTTL: time.Second, Session: "waiter"})

	// Acquired before the slowdown: see TestSlowAcquire.
	lk := leasetest.HoldHeavy(t, gk)
	p.SetDelay(200 * time.Millisecond)
	exp := lk.Expires()
	select {
	case <-lk.Done():
		t.Fatalf("lost with 200ms latency and a 15s TTL renewed every second: %v", lk.Err())
	case <-time.After(7 * time.Second):
	}
	if !lk.Expires().After(exp.Add(4 * time.Second)) {
		t.Fatalf("expiry %v: not renewed since %v", lk.Expires(), exp)
	}
	if st := status(t, direct, key); !holds(st, lk.ID()) {
		t.Fatalf("the server lost the slow holder: %+v", st.Holders)
	}
	if err := lk.Release(); err != nil {
		t.Fatalf("release through the slow link: %v", err)
	}

	p.SetDelay(0)
	lh := leasetest.HoldHeavy(t, gh)
	var log spanLog
	stop := make(chan struct{})
	log.work(lh, "slow-holder", stop)
	waiter := acquireAsync(gw, "heavy", governor.AcquireOptions{Limit: 1}, time.Minute)
	p.SetDelay(2 * time.Second)
	slowed := time.Now()
	lostAt := declaredLost(t, lh, 20*time.Second, "the holder with a 4s round trip")
	st := status(t, direct, key)
	var h governor.Holder
	for _, x := range st.Holders {
		if x.LeaseID == lh.ID() {
			h = x
		}
	}
	if h.LeaseID == "" || !st.Now.Before(h.Expires) {
		t.Fatalf("when the holder declared the loss, the server did not list the lease as live: now %v holders %+v", st.Now, st.Holders)
	}
	t.Logf("lost %v after the slowdown; the server's lease had %v left", time.Since(slowed).Round(time.Millisecond), h.Expires.Sub(st.Now))

	w := grantedAfter(t, waiter, lostAt, "the slow holder")
	log.work(w.l, "waiter", stop)
	time.Sleep(200 * time.Millisecond)
	close(stop)
	checkSpans(t, log.all(), 1)
	p.Heal()
	if err := w.l.Release(); err != nil {
		t.Fatalf("waiter's release: %v", err)
	}
}

// A lease acquired through a slow link: the acquire of a new resource
// takes several round trips (index SADD, EVALSHA, NOSCRIPT then EVAL, a
// new connection's HELLO), about 2s at 400ms each. The local deadline
// counts from the send (right), but the first renewal was scheduled a
// heartbeat after the reply: past the deadline, so the lease was
// declared lost, never renewed. With a heartbeat just short of the
// deadline (TTL 15s, margin 3s: 11.9s of 12s), that bug loses the lease
// whatever the acquire takes beyond 0.1s (one round trip is 0.4s), while
// a first renewal scheduled from the send (at half the time left: about
// 6s) has seconds to spare on a loaded machine; the test waits for that
// renewal, or the loss (a 3s TTL and a 5s watch lost it at load 18-25).
func TestSlowAcquire(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	p := newProxy(t, s.Addr)
	g := newGovernor(t, p.Addr(), governor.Options{Project: uniq("slowacq"), TTL: 15 * time.Second, Heartbeat: 11900 * time.Millisecond})
	// The backend opened first: its scripts loaded through the slow link
	// took more than its 10s at load 22.
	p.SetDelay(200 * time.Millisecond)
	l := leasetest.HoldHeavy(t, g)
	first := l.Expires()
	for deadline := time.Now().Add(time.Minute); !l.Expires().After(first); {
		select {
		case <-l.Done():
			t.Fatalf("lost before its first renewal, with a 400ms round trip and 12s before its deadline: %v", l.Err())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("neither renewed nor lost within a minute (expiry %v)", first)
		}
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
}
