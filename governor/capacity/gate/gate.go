// Package gate grants a resource's slots locally, from a capacity lease
// (package capacity, docs/capacity.md): one call to the backend per
// refresh instead of two per grant.
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
// takes its new share; while it is on its way no grant passes the
// number in use it reported, so that a share that shrinks is never
// exceeded.
package gate

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/capacity"
)

// The defaults of Options, chosen with the fleet simulation
// (docs/capacity.md, "Choosing the defaults").
const (
	DefaultLease   = 30 * time.Second
	DefaultRefresh = 5 * time.Second
)

// suspendSlack is how far the wall clock may lead the monotonic one
// since a refresh was sent before the machine counts as suspended.
const suspendSlack = 50 * time.Millisecond

// ErrClosed is returned by Acquire on a closed Gate.
var ErrClosed = errors.New("gate: closed")

// Options configure a Gate.
type Options struct {
	// Key is the resource; Limit the limit asked for (1 to
	// governor.MaxLimit), as an acquire asks for it.
	Key   governor.Key
	Limit int
	// Lease is the capacity lease's length (default DefaultLease),
	// Refresh how often it is refreshed (default DefaultRefresh; less
	// than Lease less Margin), Margin how much sooner than Lease the
	// local deadline falls (default Lease/10).
	Lease, Refresh, Margin time.Duration
	// Declaration is shown beside the share's holder.
	Declaration governor.Declaration
}

// Gate grants slots from a capacity lease. Its methods are safe for
// concurrent use.
type Gate struct {
	b      governor.Backend
	o      Options
	id     string
	secret string

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced when a grant may pass
	share    int
	inUse    int
	waiting  int
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
func New(ctx context.Context, b governor.Backend, o Options) (*Gate, error) {
	if o.Lease == 0 {
		o.Lease = DefaultLease
	}
	if o.Refresh == 0 {
		o.Refresh = DefaultRefresh
	}
	if o.Margin == 0 {
		o.Margin = o.Lease / 10
	}
	if err := governor.ValidateResource(o.Key.Resource); err != nil {
		return nil, err
	}
	switch {
	case o.Limit < 1 || o.Limit > governor.MaxLimit:
		return nil, fmt.Errorf("%w: gate limit %d; allowed: 1 to %d", governor.ErrInvalid, o.Limit, governor.MaxLimit)
	case o.Lease < time.Second || o.Lease > governor.MaxTTL:
		return nil, fmt.Errorf("%w: gate lease %v; allowed: 1s to %v", governor.ErrInvalid, o.Lease, governor.MaxTTL)
	case o.Margin < 0 || o.Refresh <= 0 || o.Refresh >= o.Lease-o.Margin:
		return nil, fmt.Errorf("%w: gate refresh %v, margin %v, lease %v; allowed: 0 < refresh < lease - margin", governor.ErrInvalid,
			o.Refresh, o.Margin, o.Lease)
	}
	var sb [governor.SecretLen / 2]byte
	if _, err := rand.Read(sb[:]); err != nil {
		return nil, err
	}
	g := &Gate{b: b, o: o, secret: hex.EncodeToString(sb[:]), changed: make(chan struct{}), kick: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{})}
	g.id = governor.LeaseIDOf(g.secret)
	g.lost, g.lostCancel = context.WithCancel(context.Background())
	if err := g.refresh(ctx); err != nil {
		return nil, err
	}
	go g.run()
	return g, nil
}

// ID is the capacity lease's id (its holder's in the resource's status).
func (g *Gate) ID() string { return g.id }

// Share is the lease's share now and how many of it are in use.
func (g *Gate) Share() (share, inUse int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.share, g.inUse
}

// validLocked tells whether the lease is valid now on this process's
// clocks (see the package doc).
func (g *Gate) validLocked(now time.Time) bool {
	if g.sent.IsZero() || !now.Before(g.deadline) {
		return false
	}
	lead := now.Round(0).Sub(g.sent.Round(0)) - now.Sub(g.sent)
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
func (g *Gate) Acquire(parent context.Context) (*Grant, error) {
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
	gr := &Grant{g: g, epoch: g.epoch}
	gr.ctx, gr.cancel = context.WithCancel(parent)
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
	defer close(g.done)
	t := time.NewTicker(g.o.Refresh)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-g.stop:
			return
		case <-t.C:
		case <-g.kick:
			// Woken early: at most one early refresh per tenth of
			// Refresh, so that waiters at saturation cost the backend
			// little more than the interval does.
			if d := g.o.Refresh/10 - time.Since(last); d > 0 {
				select {
				case <-g.stop:
					return
				case <-time.After(d):
				}
			}
		}
		last = time.Now()
		g.mu.Lock()
		if !g.sent.IsZero() && !g.validLocked(time.Now()) {
			g.lapseLocked() // past the deadline, or suspended: grants end
		}
		g.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), g.o.Refresh)
		_ = g.refresh(ctx) // an error keeps the old deadline, which decides
		cancel()
	}
}

// refresh sends one refresh and takes its answer.
func (g *Gate) refresh(ctx context.Context) error {
	g.mu.Lock()
	a := capacity.Ask{Want: min(g.inUse+g.waiting, g.o.Limit), InUse: g.inUse, Held: g.share, Token: g.token}
	g.flying, g.flyCap = true, g.inUse
	g.mu.Unlock()
	sent := time.Now()
	res, err := g.b.Acquire(ctx, g.request(a))
	g.mu.Lock()
	defer g.mu.Unlock()
	g.flying = false
	defer g.broadcastLocked()
	if err != nil {
		if errors.Is(err, governor.ErrInvalid) || errors.Is(err, governor.ErrNotOwner) {
			g.err = err
		}
		return err
	}
	if res.Share == nil {
		return fmt.Errorf("%w: %s answered a capacity lease without a share", governor.ErrBackend, g.o.Key)
	}
	if !g.sent.IsZero() && !g.validLocked(time.Now()) {
		// The lease lapsed before this answer: the grants made in it end,
		// whatever the answer gives.
		g.lapseLocked()
	}
	g.share, g.token, g.others = res.Share.Share, res.Token, res.Share.Waiting
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

func (g *Gate) request(a capacity.Ask) governor.Request {
	return governor.Request{Key: g.o.Key, ID: g.id, Secret: g.secret, Limit: g.o.Limit, Weight: 1, TTL: g.o.Lease,
		Mode: governor.Fail, Declaration: g.o.Declaration, Capacity: &a}
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
	release := g.inUse == 0
	if g.timer != nil {
		g.timer.Stop()
	}
	g.mu.Unlock()
	if !release {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), g.o.Refresh)
	defer cancel()
	_, err := g.b.Acquire(ctx, g.request(capacity.Ask{Release: true}))
	return err
}
