package governor_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/filebackend"
	"github.com/governor-dev/governor/governor/leasetiming"
	"github.com/governor-dev/governor/governor/proc"
)

// remoteClocked is a file backend as a Governor sees a backend on its
// own clock (Redis): without ExpiresOnMachineClock.
type remoteClocked struct{ governor.Backend }

// Issue 24.8: a suspend longer than the TTL stops every timer of the
// holder (Go's clock stops with the machine) while a backend on its own
// clock expires the lease. The holder, resumed, must take its lease for
// lost at once, not at its next renewal. The suspend is faked: the
// sleep-inclusive clock jumps an hour ahead of Go's.
func TestLeaseLostAfterSuspendPastDeadline(t *testing.T) {
	var jump atomic.Int64
	restore := governor.SetSleepClock(func() time.Duration { return proc.SleepClock() + time.Duration(jump.Load()) })
	defer restore()
	for _, c := range []struct {
		name     string
		wrap     func(governor.Backend) governor.Backend
		wantLost bool
	}{
		{"backend on its own clock", func(b governor.Backend) governor.Backend { return remoteClocked{b} }, true},
		{"file backend, on the machine's clock", func(b governor.Backend) governor.Backend { return b }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			jump.Store(0)
			fb, err := filebackend.New(t.TempDir(), filebackend.Options{})
			if err != nil {
				t.Fatal(err)
			}
			g, err := governor.New(c.wrap(fb), governor.Options{TTL: 30 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			l, err := g.Acquire(context.Background(), "res", governor.AcquireOptions{Limit: 1})
			if err != nil {
				t.Fatal(err)
			}
			jump.Store(int64(time.Hour)) // the machine slept for an hour
			select {
			case <-l.Done():
				if !c.wantLost {
					t.Fatalf("lease lost on a backend whose clock stopped with the machine: %v", l.Err())
				}
				if !errors.Is(l.Err(), governor.ErrLeaseLost) {
					t.Fatalf("Err %v, want ErrLeaseLost", l.Err())
				}
			case <-time.After(5 * time.Second):
				// Far less than the lease's deadline (24s), far more than the
				// watch's look every 250ms.
				if c.wantLost {
					t.Fatal("the lease was still taken for held 5s after a suspend past its deadline")
				}
			}
			_ = l.Release()
		})
	}
}

// TestSuspendWatchOnlyWhileHeld: the suspend watch runs only while the
// Governor holds leases. An idle Governor, and one whose acquire only
// waits, never read the sleep clock between calls (an idle waiter wakes
// for nothing); holding a lease, the watch reads it every look; once the
// last lease is released, it stops.
func TestSuspendWatchOnlyWhileHeld(t *testing.T) {
	var reads atomic.Int64
	restore := governor.SetSleepClock(func() time.Duration { reads.Add(1); return proc.SleepClock() })
	defer restore()
	fb, err := filebackend.New(t.TempDir(), filebackend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g, err := governor.New(remoteClocked{fb}, governor.Options{TTL: 30 * time.Second, QueueTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	still := func(what string) {
		t.Helper()
		n := reads.Load()
		time.Sleep(time.Second) // four looks of a watch
		if got := reads.Load(); got != n {
			t.Fatalf("%s: the sleep clock was read %d times in a second; want none (no watch)", what, got-n)
		}
	}
	still("an idle Governor")
	// A holder of another Governor, so that this one's acquire waits.
	other, err := governor.New(remoteClocked{fb}, governor.Options{TTL: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	ctx := context.Background()
	h, err := other.Acquire(ctx, "res", governor.AcquireOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	queued := make(chan struct{}, 1)
	got := make(chan *governor.Lease, 1)
	go func() {
		l, err := g.Acquire(ctx, "res", governor.AcquireOptions{Limit: 1, Mode: governor.Wait,
			OnQueued: func(governor.Result) { queued <- struct{}{} }})
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	<-queued
	// other holds a lease: its watch runs; count this one's reads alone by
	// releasing other's lease only after.
	n := reads.Load()
	time.Sleep(time.Second)
	waiting := reads.Load() - n
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
	l := <-got
	if l == nil {
		t.FailNow()
	}
	// other's watch alone read it meanwhile (four looks a second, a few
	// more for one that stops); none was this Governor's.
	if waiting > 8 {
		t.Fatalf("%d reads of the sleep clock in a second with one lease held in the process; want one watch's", waiting)
	}
	n = reads.Load()
	time.Sleep(time.Second)
	if got := reads.Load() - n; got < 2 {
		t.Fatalf("holding a lease: %d reads of the sleep clock in a second; want the watch's looks", got)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	// The watches' next looks find nothing held: a quiet second follows.
	for deadline := time.Now().Add(30 * time.Second); ; {
		n := reads.Load()
		time.Sleep(time.Second)
		if reads.Load() == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the sleep clock is still read 30 s after the last lease was released; want the watch stopped")
		}
	}
}

// TestSuspendDuringAcquire: a suspend between an acquire's call and its
// reply, when no watch runs (nothing held), counts as time passed: one
// past the lease's deadline has the grant renewed before it is
// returned; a shorter one brings the lease's local deadline forward. A
// wall clock set back during the call hides whether the machine slept:
// the grant is renewed before it is returned.
func TestSuspendDuringAcquire(t *testing.T) {
	var jump, wall atomic.Int64 // the sleep clock's and the wall clock's lead
	restore := governor.SetSleepClock(func() time.Duration { return proc.SleepClock() + time.Duration(jump.Load()) })
	defer restore()
	restoreWall := governor.SetWallOffset(func() time.Duration { return time.Duration(wall.Load()) })
	defer restoreWall()
	fb, err := filebackend.New(t.TempDir(), filebackend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ttl := 30 * time.Second
	b := &suspendingGrants{Backend: remoteClocked{fb}, jump: &jump, wall: &wall}
	g, err := governor.New(b, governor.Options{TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ctx := context.Background()
	b.by = 10 * time.Second
	before := time.Now()
	l, err := g.Acquire(ctx, "r", governor.AcquireOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	margin := leasetiming.SafetyMarginFor(ttl)
	if latest := time.Now().Add(ttl - margin - b.by); l.Deadline().After(latest) || b.renewals.Load() != 0 {
		t.Fatalf("a 10 s suspend in the acquire (sent after %v): deadline %v, %d renewals; want no later than %v, none",
			before, l.Deadline(), b.renewals.Load(), latest)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	b.by = time.Hour
	l, err = g.Acquire(ctx, "r", governor.AcquireOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if b.renewals.Load() != 1 || !time.Now().Before(l.Deadline()) {
		t.Fatalf("an hour's suspend in the acquire: %d renewals, deadline %v; want the grant renewed before it is returned",
			b.renewals.Load(), l.Deadline())
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	// The wall clock set back a minute during the call: whatever the
	// machine did meanwhile is unknown, so the grant is renewed first.
	b.by, b.setBack = 0, time.Minute
	l, err = g.Acquire(ctx, "r", governor.AcquireOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if b.renewals.Load() != 2 || !time.Now().Before(l.Deadline()) {
		t.Fatalf("the wall clock set back in the acquire: %d renewals in all, deadline %v; want the grant renewed before it is returned",
			b.renewals.Load(), l.Deadline())
	}
}

// suspendingGrants makes the machine sleep for by (the sleep clock and
// the wall clock jump) and sets the wall clock back by setBack during each
// acquire, and counts renewals.
type suspendingGrants struct {
	governor.Backend
	jump, wall  *atomic.Int64
	by, setBack time.Duration
	renewals    atomic.Int64
}

func (b *suspendingGrants) Acquire(ctx context.Context, req governor.Request) (governor.Result, error) {
	res, err := b.Backend.Acquire(ctx, req)
	// A suspend moves the sleep-inclusive and the wall clock on alike.
	b.jump.Add(int64(b.by))
	b.wall.Add(int64(b.by - b.setBack))
	return res, err
}

func (b *suspendingGrants) Renew(ctx context.Context, r governor.Renewal) (time.Time, error) {
	b.renewals.Add(1)
	return b.Backend.Renew(ctx, r)
}
