package governor

import (
	"sync/atomic"
	"time"

	"github.com/governor-dev/governor/governor/leasetiming"
	"github.com/governor-dev/governor/governor/proc"
)

// A lease's local deadline is kept on Go's monotonic clock, and its
// timers run on it: CLOCK_MONOTONIC on Linux, mach_absolute_time on
// macOS, both stopped while the machine is suspended. A backend on its
// own clock (Redis, even on this machine: it expires keys by wall time)
// runs on through a suspend, so after one longer than the TTL it may
// have granted the slot elsewhere while every timer of this process
// says the lease is still held, until its next renewal is refused.
// watchSuspend closes that gap: it compares Go's clock with the
// sleep-inclusive one (proc.SleepClock: CLOCK_BOOTTIME, macOS's
// CLOCK_MONOTONIC) every suspendTick, and when the two part by more than
// suspendSlack — the machine was suspended that long — it declares lost
// every lease whose deadline, moved on by the suspend, has passed.

// suspendTick bounds how long after a resume a lease whose deadline
// passed in the suspend is still taken for held.
const (
	suspendTick  = 250 * time.Millisecond
	suspendSlack = 50 * time.Millisecond
)

// lostSuspended is why a lease was declared lost by watchSuspend.
const lostSuspended = "the machine was suspended past its deadline"

// sleepClock holds the sleep-inclusive clock watchSuspend reads (a test
// fakes a suspend with it); nil means proc.SleepClock.
var sleepClock atomic.Pointer[func() time.Duration]

func readSleepClock() time.Duration {
	if f := sleepClock.Load(); f != nil {
		return (*f)()
	}
	return proc.SleepClock()
}

// machineClocked is implemented by a backend whose expiries run on this
// machine's clock that stops in a suspend, as Go's does (the file
// backend): a suspend moves its expiries with the holders' deadlines, so
// it needs no watch (and a watch would declare lost leases it still
// holds). It is not part of Backend: the Redis backend's expiries run on
// the server's clock, which a suspend of this machine does not stop.
type machineClocked interface {
	ExpiresOnMachineClock() bool
}

// A clockMark is a moment on Go's clock: time.Now, with its monotonic
// reading (stopped in a suspend) and its wall reading (CLOCK_REALTIME,
// which the kernel moves on by the time suspended), both read without a
// system call; and the wall offset a test fakes then.
type clockMark struct {
	t   time.Time
	off time.Duration
}

func (g *Governor) mark() clockMark { return clockMark{t: time.Now(), off: readWallOffset()} }

// sentAt is when the call that made a grant was sent, m, as its lease's
// local deadline counts it: moved back by any suspend since (the
// backend's clock ran on through it, suspendedSince).
func (g *Governor) sentAt(m clockMark) time.Time { return m.t.Add(-g.suspendedSince(m)) }

// suspendedSince is how long the machine was suspended since m, where
// more than suspendSlack and g watches (0 otherwise): a grant whose call
// went out before a suspend counts that time as passed. It is the wall
// clock's lead over Go's monotonic one since m (the sleep-inclusive clock
// would cost a system call on every acquire: 1.3 µs here, against 55 ns).
// A wall clock set forward meanwhile counts as a suspend: the grant's
// deadline comes forward, or it is renewed first. One set back by more
// than suspendSlack may hide a suspend: suspendedSince then returns
// wallSetBack, longer than any TTL, and the grant is renewed before it is
// held. Only a suspend and a setting back of the wall clock by as much
// (within suspendSlack), during one call, would go unseen.
func (g *Governor) suspendedSince(m clockMark) time.Duration {
	if !g.watches || m.t.IsZero() {
		return 0
	}
	now, off := time.Now(), readWallOffset()
	gap := time.Duration(now.UnixNano()-m.t.UnixNano()) + off - m.off - now.Sub(m.t)
	switch {
	case gap > suspendSlack:
		return gap
	case gap < -suspendSlack:
		return wallSetBack
	}
	return 0
}

// wallSetBack is suspendedSince's answer when the wall clock was set back:
// more than any lease's TTL (leasetiming.MaxTTL).
const wallSetBack = 2 * leasetiming.MaxTTL

// wallOffset holds a test's fake shift of the wall clock (a suspend it
// fakes moves it on); nil means none.
var wallOffset atomic.Pointer[func() time.Duration]

func readWallOffset() time.Duration {
	if f := wallOffset.Load(); f != nil {
		return (*f)()
	}
	return 0
}

// watchSuspend starts the suspend watch of g (see above); g.mu is held, g
// is not closed, and g.watches (its backend is not machineClocked). It
// runs while g holds leases: a suspend before a grant is counted when the
// grant arrives (suspendedSince), so an idle Governor, or one whose
// acquires only wait, never wakes for it. Close waits for it.
func (g *Governor) watchSuspend() {
	g.watching = true
	// The caller's call is active: Close is not done waiting. The
	// baseline is now: the lease is held from here.
	g.active.Add(1)
	mono, sleep := time.Now(), readSleepClock()
	go func() {
		defer g.active.Done()
		tick := time.NewTicker(suspendTick)
		defer tick.Stop()
		for {
			select {
			case <-g.closing.Done():
				return
			case <-tick.C:
			}
			m, s := time.Now(), readSleepClock()
			suspended := (s - sleep) - m.Sub(mono)
			mono, sleep = m, s
			if suspended > suspendSlack {
				g.loseSuspended(m, suspended)
			}
			g.mu.Lock()
			idle := len(g.leases) == 0
			if idle {
				g.watching = false
			}
			g.mu.Unlock()
			if idle {
				return
			}
		}
	}()
}

// loseSuspended declares lost every lease of g whose deadline, as of now
// on Go's clock, is nearer than suspended: on the backend's clock it has
// passed. A lease renewed after the resume but before this look is
// declared lost too (its renewal may have come after another holder's
// grant: it proves nothing about the time between).
func (g *Governor) loseSuspended(now time.Time, suspended time.Duration) {
	g.mu.Lock()
	ls := make([]*Lease, 0, len(g.leases))
	for l := range g.leases {
		ls = append(ls, l)
	}
	g.mu.Unlock()
	for _, l := range ls {
		l.mu.Lock()
		passed := l.err == nil && !l.released && l.deadline.Sub(now) < suspended
		l.mu.Unlock()
		if passed {
			l.lose(ErrLeaseLost, lostSuspended)
		}
	}
}
