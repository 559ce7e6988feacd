package governor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/governor-dev/governor/governor/capacity"
	"github.com/governor-dev/governor/governor/internal/capgate"
	"github.com/governor-dev/governor/governor/leasetiming"
)

// capShares are the capacity leases of a Governor (Options.Capacity):
// one gate per resource named, opened on its first grant and closed by
// Close, which gives its share back.
type capShares struct {
	cfg map[string]capacity.Config // with defaults

	gates openings[int, *capShare]
	rates capRates // the rate shares (caprate.go)
}

// capShare is one resource's gate.
type capShare struct {
	*capgate.Gate
	id string // the capacity lease's id: its holder's in Status
}

// newCapShares checks cfg (Options.Capacity).
func newCapShares(cfg map[string]capacity.Config) (*capShares, error) {
	c := &capShares{cfg: map[string]capacity.Config{}}
	for resource, rc := range cfg {
		if err := ValidateResource(resource); err != nil {
			return nil, fmt.Errorf("%w (Options.Capacity)", err)
		}
		rc = rc.WithDefaults()
		if err := rc.Validate(); err != nil {
			return nil, invalid("Options.Capacity[%q]: %v", resource, err)
		}
		if rc.Lease > leasetiming.MaxTTL {
			return nil, invalid("Options.Capacity[%q]: capacity lease %v; allowed: at most %v", resource, rc.Lease, leasetiming.MaxTTL)
		}
		c.cfg[resource] = rc
	}
	return c, nil
}

// plain checks req for a grant from its resource's share. A request that a share cannot grant (a
// weight above 1, an exclusive one, a progress timeout, a queue policy,
// a priority or fair key, a supersede key, no heartbeat) is refused: a
// share grants single slots of plain leases (a TTL of their own does
// not apply: the share's lease decides), and the rest stay exact and
// central.
func plain(req Request, tm leasetiming.Timing) error {
	d := req.Declaration
	why := ""
	switch {
	case req.Weight != 1 || req.Exclusive:
		why = fmt.Sprintf("weight %d (exclusive %v)", req.Weight, req.Exclusive)
	case tm.Heartbeat <= 0:
		why = "no heartbeat"
	case d.ProgressTimeout > 0:
		why = fmt.Sprintf("progress timeout %v", d.ProgressTimeout)
	case req.Policy != "" || req.Priority != "" || req.FairKey != "":
		why = "a queue policy, priority or fair key"
	case req.Supersede != "" || req.CancelInProgress:
		why = fmt.Sprintf("supersede key %q", req.Supersede)
	}
	if why != "" {
		return invalid("%s is granted from a capacity share (Options.Capacity): %s; allowed: one slot (weight 1) of a heartbeating lease, no progress timeout, queue policy, priority, fair key or supersede", req.Key.Resource, why)
	}
	return nil
}

// gate returns the gate of req's resource, opening it (its first
// refresh, on a context of its own, so that no one caller's end fails
// the others) on first use.
func (c *capShares) gate(ctx context.Context, g *Governor, req Request, rc capacity.Config) (*capShare, error) {
	s, err := c.gates.get(ctx, req.Key.Resource, req.Limit, func() (*capShare, error) { return g.openShare(req, rc) })
	if err != nil {
		return nil, err
	}
	if s.limit != req.Limit {
		return nil, invalid("%s is granted from a capacity share taken with limit %d; asked: limit %d; allowed: the same limit in every grant of a Governor",
			req.Key.Resource, s.limit, req.Limit)
	}
	return s.v, nil
}

// openShare opens the capacity lease of req's resource.
func (g *Governor) openShare(req Request, rc capacity.Config) (*capShare, error) {
	secret, id := newSecret()
	send := func(ctx context.Context, a capacity.Ask) (capacity.Share, int64, error) {
		res, err := g.b.Acquire(ctx, Request{Key: req.Key, ID: id, Secret: secret, Limit: req.Limit, Weight: 1, TTL: rc.Lease,
			Mode: Fail, Declaration: g.decl, Capacity: &a})
		switch {
		case err != nil:
			return capacity.Share{}, 0, err
		case res.Share == nil:
			return capacity.Share{}, 0, fmt.Errorf("%w: %s answered a capacity lease without a share", ErrBackend, req.Key)
		}
		return *res.Share, res.Token, nil
	}
	ctx, cancel := context.WithTimeout(g.closing, rc.Refresh)
	defer cancel()
	gate, err := capgate.New(ctx, capgate.Options{Limit: req.Limit, Lease: rc.Lease, Refresh: rc.Refresh, Margin: rc.Margin(),
		Fatal: func(err error) bool { return errors.Is(err, ErrInvalid) || errors.Is(err, ErrNotOwner) }, First: 1}, send)
	if err != nil {
		return nil, err
	}
	return &capShare{Gate: gate, id: id}, nil
}

// close closes every gate and bucket: each gate waits for its slots in
// use (none once Close has released every lease); each gives its share
// back.
func (c *capShares) close() error {
	first := c.rates.close()
	if err := c.gates.close(); err != nil && first == nil {
		first = err
	}
	return first
}

// grantLocal grants req's slot from its resource's share (see plain),
// as a Lease: no round trip, no heartbeat; it is lost when the share's
// lease lapses on this process's clock (its Done closes, Err is
// ErrLeaseLost), and Release gives the slot back to the share. Its
// Token is 0 (a share grants no fencing token) and its ID the capacity
// lease's.
func (g *Governor) grantLocal(ctx context.Context, req Request, tm leasetiming.Timing, rc capacity.Config) (*Lease, error) {
	if err := plain(req, tm); err != nil {
		return nil, err
	}
	s, err := g.caps.gate(ctx, g, req, rc)
	if err != nil {
		return nil, err
	}
	wait, cancel := context.WithCancel(ctx)
	defer context.AfterFunc(g.closing, cancel)()
	defer cancel()
	sent := time.Now()
	gr, err := s.Take(wait, context.Background(), req.Mode != Wait)
	switch {
	case errors.Is(err, capgate.ErrFull):
		st, serr := g.b.Status(ctx, req.Key)
		if serr != nil {
			return nil, serr
		}
		share, inUse := s.Share()
		return nil, &BusyError{Resource: req.Key.Resource, Status: st, Rule: fmt.Sprintf("this process's capacity share: %d of %d in use", inUse, share)}
	case errors.Is(err, capgate.ErrClosed), err != nil && g.closing.Err() != nil && ctx.Err() == nil:
		return nil, ErrClosed
	case err != nil:
		return nil, err
	}
	l := &Lease{g: g, key: req.Key, id: s.id, weight: 1, limit: req.Limit, sent: sent, local: gr, deadline: gr.Deadline(),
		done: make(chan struct{}), stop: make(chan struct{}), stopped: make(chan struct{}), renewed: make(chan struct{}, 1)}
	l.unwatch = context.AfterFunc(gr.Context(), func() { l.lose(ErrLeaseLost, lostNoRenewal) })
	g.mu.Lock()
	closed := g.closed
	if !closed {
		g.leases[l] = struct{}{}
	}
	g.mu.Unlock()
	if closed {
		_ = l.Release()
		return nil, ErrClosed
	}
	return l, nil
}

// loseLocal marks a local grant lost (lose): its slot stays counted in
// the share until Release, as the work may still run.
func (l *Lease) loseLocal(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil && !l.released {
		l.err = err
		l.closeDone()
	}
}

// releaseLocal is Release of a local grant: lostErr, or ErrLeaseLost
// when the share's lease lapsed since the grant.
func (l *Lease) releaseLocal(lostErr error) error {
	if lostErr == nil && l.local.Err() != nil {
		lostErr = ErrLeaseLost
	}
	l.mu.Lock()
	if l.err == nil {
		l.err = ErrNotHeld
		if lostErr != nil {
			l.err = lostErr
		}
		l.closeDone()
	}
	l.mu.Unlock()
	l.unwatch()
	l.local.Release()
	l.g.forget(l)
	return lostErr
}
