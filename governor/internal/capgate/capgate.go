// Package capgate grants a resource's slots locally from a capacity
// lease (package capacity, docs/capacity.md), with no round trip per
// grant: the one implementation behind package gate and the pipeline's
// local grants (governor.Options.Capacity). It knows no backend: its
// caller sends each refresh (Refresh).
//
// A Gate holds one capacity lease on one resource. Acquire grants a slot
// with no round trip while fewer than the lease's share are in use and
// the lease is valid on this process's monotonic clock: until the send
// time of its last answered refresh plus Lease less Margin, and never
// after the machine was suspended (the wall clock's lead over the
// monotonic one since that send), as a lease's local deadline is counted
// (governor.Lease). The backend's expiry of the share is never earlier
// than that deadline, so a process stopped (SIGSTOP) or cut off past it
// stops granting, and the context of each grant is cancelled, before
// its share can be granted elsewhere. A background refresh every
// Refresh reports what the process wants (in use plus waiting) and
// takes its new share; while it is on its way no grant passes the number
// in use it reported, so that a share that shrinks is never exceeded.
package capgate

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/governor-dev/governor/governor/capacity"
)

// suspendSlack is how far the wall clock may lead the monotonic one
// since a refresh was sent before the machine counts as suspended.
const suspendSlack = 50 * time.Millisecond

// ErrClosed is returned by Acquire on a closed Gate.
var ErrClosed = errors.New("gate: closed")

// Refresh sends one refresh of the capacity lease (or, with
// Ask.Release, its end) and returns its answer and the lease's fencing
// token.
type Refresh func(ctx context.Context, a capacity.Ask) (capacity.Share, int64, error)

// Options configure a Gate; the caller has checked them (0 < Refresh <
// Lease - Margin).
type Options struct {
	// Limit is the limit asked for: no want passes it.
	Limit int
	// Lease is the capacity lease's length, Refresh how often it is
	// refreshed, Margin how much sooner than Lease the local deadline
	// falls.
	Lease, Refresh, Margin time.Duration
	// Fatal tells a refresh's error that ends the gate (a refusal):
	// Acquire returns it from then on. Other errors keep the old
	// deadline, which decides.
	Fatal func(error) bool
	// First is the want of the first refresh (0: none), for a gate
	// opened by the grant that needs it.
	First int
}

// Gate grants slots from a capacity lease. Its methods are safe for
// concurrent use.
type Gate struct {
	send Refresh
	o    Options

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced when a grant may pass
	share    int
	inUse    int
	waiting  int
	granted  int64 // grants made since New: each refresh reports it (Ask.Granted)
	token    int64
	sent     time.Time // send time of the last answered refresh
	deadline time.Time // sent + Lease - Margin (monotonic)
	flying   bool      // a refresh is on its way
	flyCap   int       // the in use it reported
	others   bool      // the last answer said others wait
	err      error     // a refusal that ends the gate
	closed   bool
	// epoch counts the lapses of the lease: a grant is valid only in the
	// epoch it was made in. lost is the epoch's context, cancelled when
	// it lapses (lapseLocked); grants' contexts follow it.
	epoch      uint64
	lost       context.Context
	lostCancel context.CancelFunc
	timer      *time.Timer

	kick chan struct{}
	stop chan struct{}
	done chan struct{}
}

// New opens a Gate: it takes its first share at once (a newcomer's share
// may be 0 until others shrink) and refreshes it in the background until
// Close.
func New(ctx context.Context, o Options, send Refresh) (*Gate, error) {
	g := &Gate{send: send, o: o, changed: make(chan struct{}), kick: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{})}
	g.lost, g.lostCancel = context.WithCancel(context.Background())
	g.waiting = o.First
	err := g.refresh(ctx)
	g.waiting = 0
	if err != nil {
		return nil, err
	}
	go g.run()
	return g, nil
}

// Share is the lease's share now and how many of it are in use.
func (g *Gate) Share() (share, inUse int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.share, g.inUse
}

// validLocked tells whether the lease is valid now on this process's
// clocks (see the package doc).
func (g *Gate) validLocked(now time.Time) bool { return valid(g.sent, g.deadline, now) }

// valid tells whether a lease whose answered refresh was sent at sent,
// with local deadline deadline, is valid at now on this process's
// clocks: before the deadline (monotonic), and no suspend since sent.
func valid(sent, deadline, now time.Time) bool {
	if sent.IsZero() || !now.Before(deadline) {
		return false
	}
	lead := now.Round(0).Sub(sent.Round(0)) - now.Sub(sent)
	return lead <= suspendSlack && lead >= -suspendSlack
}

// ErrLost is a grant's Err once its capacity lease lapsed: its deadline
// passed, or the machine was suspended, before a refresh was answered.
var ErrLost = errors.New("gate: the capacity lease lapsed: stop the work")

// Grant is one slot granted locally.
type Grant struct {
	g      *Gate
	epoch  uint64
	ctx    context.Context
	cancel context.CancelFunc
	stop   func() bool
	once   sync.Once
}

// Deadline is when the grant's capacity lease lapses, on this process's
// monotonic clock, unless a refresh is answered before: the last
// answered refresh's send time plus Lease less Margin (zero once the
// grant is lost).
func (gr *Grant) Deadline() time.Time {
	g := gr.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if gr.epoch != g.epoch {
		return time.Time{}
	}
	return g.deadline
}

// Context ends with the parent given to Acquire, or when the capacity
// lease lapses (it is cancelled by a timer: Err checks the clock itself).
func (gr *Grant) Context() context.Context { return gr.ctx }

// Err is nil while the grant is valid: its capacity lease has not lapsed
// since it was granted, checked on this process's clocks now (so a
// process resumed after a stop sees it before any timer has run); else
// ErrLost, or ErrClosed.
func (gr *Grant) Err() error {
	g := gr.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if gr.epoch != g.epoch || !g.validLocked(time.Now()) {
		return ErrLost
	}
	return nil
}

// Release frees the slot; call it once the work has ended (later calls
// do nothing).
func (gr *Grant) Release() {
	gr.once.Do(func() {
		gr.stop()
		gr.cancel()
		g := gr.g
		g.mu.Lock()
		g.inUse--
		if g.others && g.inUse <= g.share {
			g.wake() // what others wait for can go back now
		}
		g.broadcastLocked()
		g.mu.Unlock()
	})
}

// Acquire waits for a slot of the share, granted locally.
func (g *Gate) Acquire(parent context.Context) (*Grant, error) { return g.Take(parent, parent, false) }

// ErrFull is Take's refusal when it does not wait: the share's slots
// are all in use (or the lease is not valid now).
var ErrFull = errors.New("capgate: the share is in use")

// Take is Acquire waiting under wait only, the grant's context made from
// base: a grant that outlives the call that waited for it. With try, it
// does not wait: no slot of the share free now is ErrFull (and the
// share is refreshed soon).
func (g *Gate) Take(wait, base context.Context, try bool) (*Grant, error) {
	parent := wait
	g.mu.Lock()
	counted := false
	for {
		switch {
		case g.err != nil:
			defer g.mu.Unlock()
			return nil, g.err
		case g.closed:
			defer g.mu.Unlock()
			return nil, ErrClosed
		}
		limit := g.share
		if g.flying {
			limit = min(limit, g.flyCap)
		}
		if g.inUse < limit && g.validLocked(time.Now()) {
			break
		}
		if try {
			defer g.mu.Unlock()
			g.wake() // wanting more than the share: tell the backend now
			return nil, ErrFull
		}
		if !counted {
			counted = true
			g.waiting++
			g.wake() // wanting more than the share: tell the backend now
		}
		ch := g.changed
		g.mu.Unlock()
		select {
		case <-ch:
		case <-parent.Done():
			g.mu.Lock()
			g.waiting--
			g.mu.Unlock()
			return nil, parent.Err()
		}
		g.mu.Lock()
	}
	if counted {
		g.waiting--
	}
	g.inUse++
	g.granted++
	gr := &Grant{g: g, epoch: g.epoch}
	gr.ctx, gr.cancel = context.WithCancel(base)
	gr.stop = context.AfterFunc(g.lost, gr.cancel)
	g.mu.Unlock()
	return gr, nil
}

// lapseLocked ends the epoch: its grants are no longer valid and their
// contexts end; grants of the next epoch wait for an answered refresh.
func (g *Gate) lapseLocked() {
	g.lostCancel()
	g.epoch++
	g.lost, g.lostCancel = context.WithCancel(context.Background())
}

// wake asks the background refresh to run now.
func (g *Gate) wake() {
	select {
	case g.kick <- struct{}{}:
	default:
	}
}

func (g *Gate) broadcastLocked() {
	close(g.changed)
	g.changed = make(chan struct{})
}

// run refreshes every Refresh, or at once when woken, until Close.
func (g *Gate) run() {
	every(g.o.Refresh, g.stop, g.kick, g.done, func() {
		g.mu.Lock()
		if !g.sent.IsZero() && !g.validLocked(time.Now()) {
			g.lapseLocked() // past the deadline, or suspended: grants end
		}
		g.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), g.o.Refresh)
		_ = g.refresh(ctx) // an error keeps the old deadline, which decides
		cancel()
	})
}

// every runs refresh every interval, or at once when kicked, until stop
// is closed; then it closes done. Woken early, it refreshes at most once
// per tenth of interval, so that waiters at saturation cost the backend
// little more than the interval does.
func every(interval time.Duration, stop <-chan struct{}, kick <-chan struct{}, done chan<- struct{}, refresh func()) {
	defer close(done)
	t := time.NewTicker(interval)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		case <-kick:
			if d := interval/10 - time.Since(last); d > 0 {
				select {
				case <-stop:
					return
				case <-time.After(d):
				}
			}
		}
		last = time.Now()
		refresh()
	}
}

// refresh sends one refresh and takes its answer.
func (g *Gate) refresh(ctx context.Context) error {
	g.mu.Lock()
	a := capacity.Ask{Want: min(g.inUse+g.waiting, g.o.Limit), InUse: g.inUse, Held: g.share, Token: g.token, Granted: g.granted}
	g.flying, g.flyCap = true, g.inUse
	g.mu.Unlock()
	sent := time.Now()
	res, token, err := g.send(ctx, a)
	g.mu.Lock()
	defer g.mu.Unlock()
	g.flying = false
	defer g.broadcastLocked()
	if err != nil {
		if g.o.Fatal != nil && g.o.Fatal(err) {
			g.err = err
		}
		return err
	}
	if !g.sent.IsZero() && !g.validLocked(time.Now()) {
		// The lease lapsed before this answer: the grants made in it end,
		// whatever the answer gives.
		g.lapseLocked()
	}
	g.share, g.token, g.others = res.Share, token, res.Waiting
	g.sent, g.deadline = sent, sent.Add(g.o.Lease-g.o.Margin)
	if g.timer != nil {
		g.timer.Stop()
	}
	epoch := g.epoch
	g.timer = time.AfterFunc(time.Until(g.deadline), func() {
		g.mu.Lock()
		if g.epoch == epoch && !g.validLocked(time.Now()) {
			g.lapseLocked()
		}
		g.mu.Unlock()
	})
	return nil
}

// Close stops granting and the refreshes, ends the grants' contexts,
// waits until the slots in use are freed (or the lease's deadline has
// passed), and then gives the share back; past the deadline it is left
// to expire.
func (g *Gate) Close() error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil
	}
	g.closed = true
	close(g.stop)
	g.broadcastLocked()
	g.mu.Unlock()
	<-g.done
	g.mu.Lock()
	g.lapseLocked()
	for g.inUse > 0 && g.validLocked(time.Now()) {
		ch := g.changed
		wait := time.Until(g.deadline)
		g.mu.Unlock()
		select {
		case <-ch:
		case <-time.After(wait):
		}
		g.mu.Lock()
	}
	release, granted := g.inUse == 0, g.granted
	if g.timer != nil {
		g.timer.Stop()
	}
	g.mu.Unlock()
	if !release {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), g.o.Refresh)
	defer cancel()
	_, _, err := g.send(ctx, capacity.Ask{Release: true, Granted: granted})
	return err
}
