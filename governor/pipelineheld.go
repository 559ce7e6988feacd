package governor

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Held is what Governor.Hold took: its leases, in acquisition order,
// and its open spend reservation (nil: none). Release frees them and
// settles together.
type Held struct {
	g         *Governor
	onRelease func(l *Lease) error

	mu     sync.Mutex // guards leases and settle: Done, Leases may run beside a Release
	leases []*Lease
	settle *settleOnRelease
	spend  *BudgetReservation

	doneOnce sync.Once
	done     chan struct{}
}

// Leases are the leases still held, in acquisition order.
func (h *Held) Leases() []*Lease {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]*Lease(nil), h.leases...)
}

// Spend is the open spend reservation (nil: the Ask had no Spends):
// settle it after the work (SettleOnRelease, or its Settle); one never
// settled counts at its estimate once its TTL passes.
func (h *Held) Spend() *BudgetReservation { return h.spend }

// Done is closed once any lease held is lost (never when there is none).
func (h *Held) Done() <-chan struct{} {
	h.doneOnce.Do(func() {
		h.done = make(chan struct{})
		leases := h.Leases()
		if len(leases) == 0 {
			return
		}
		lost := make(chan struct{}, len(leases))
		for _, l := range leases {
			go func() { <-l.Done(); lost <- struct{}{} }()
		}
		go func() { <-lost; close(h.done) }()
	})
	return h.done
}

// Context returns a context cancelled when any lease held ends (with
// its error as the cause), for work that must stop with them.
func (h *Held) Context(parent context.Context) (context.Context, context.CancelFunc) {
	leases := h.Leases()
	if len(leases) == 1 {
		return leases[0].Context(parent)
	}
	ctx, cancel := context.WithCancelCause(parent)
	if len(leases) > 1 {
		done := h.Done()
		go func() {
			select {
			case <-done:
				for _, l := range leases {
					if err := l.Err(); err != nil {
						cancel(err)
					}
				}
			case <-ctx.Done():
			}
		}()
	}
	return ctx, func() { cancel(context.Canceled) }
}

// settleOnRelease is a settle to send with a release (SettleOnRelease).
type settleOnRelease struct {
	r      *BudgetReservation
	actual []BudgetAmount
	done   func(BudgetSettlement, error)
}

// SettleOnRelease has the next Release settle r (the Held's Spend, or
// another reservation of this Governor) with actual (r.SettleEach: a
// budget not named at its estimate): sent with the release of the first
// lease freed (Lease.ReleaseSettle: on Redis no round trip of its own),
// or alone when none is. done (nil: none) is told the outcome; a settle
// that fails leaves the estimate counted.
func (h *Held) SettleOnRelease(r *BudgetReservation, actual []BudgetAmount, done func(BudgetSettlement, error)) {
	if done == nil {
		done = func(BudgetSettlement, error) {}
	}
	h.mu.Lock()
	h.settle = &settleOnRelease{r: r, actual: actual, done: done}
	h.mu.Unlock()
}

// ReleaseError is the error of a Release: the resources whose lease had
// been lost (their work may have overlapped another holder's), and the
// releases that failed otherwise (those leases expire after their TTL).
type ReleaseError struct {
	Lost   []string
	Failed []error
}

func (e *ReleaseError) Error() string {
	var errs []error
	for _, r := range e.Lost {
		errs = append(errs, fmt.Errorf("the lease on %s was lost", r))
	}
	return errors.Join(append(errs, e.Failed...)...).Error()
}

// Release frees every lease held, in reverse acquisition order, with
// the settle asked for (SettleOnRelease). It returns nil or a
// *ReleaseError. A second Release frees nothing.
func (h *Held) Release() error { return h.ReleaseWith(nil) }

// ReleaseWith releases as Release does, asking before(l) first for each
// lease (nil: release all): ok false leaves that lease held (a run whose
// lease file an escaped process still holds); after, when not nil, is
// called once the lease is released.
func (h *Held) ReleaseWith(before func(*Lease) (after func(), ok bool)) error {
	var re ReleaseError
	h.mu.Lock()
	leases := h.leases
	h.leases = nil
	ps := h.settle
	h.settle = nil
	h.mu.Unlock()
	for i := len(leases) - 1; i >= 0; i-- {
		l := leases[i]
		var after func()
		if before != nil {
			var ok bool
			if after, ok = before(l); !ok {
				continue // detached: left held
			}
		}
		if h.onRelease != nil {
			if err := h.onRelease(l); err != nil {
				re.Failed = append(re.Failed, err)
			}
		}
		var err error
		if ps != nil {
			var st BudgetSettlement
			var serr error
			st, serr, err = l.ReleaseSettle(ps.r, ps.actual)
			ps.done(st, serr)
			ps = nil
		} else {
			err = l.Release()
		}
		if after != nil {
			after()
		}
		switch {
		case errors.Is(err, ErrLeaseLost):
			re.Lost = append(re.Lost, l.Resource())
		case err != nil:
			re.Failed = append(re.Failed, fmt.Errorf("releasing %s: %w (it expires after its TTL)", l.Resource(), err))
		}
	}
	if ps != nil {
		ps.done(ps.r.SettleEach(context.Background(), ps.actual))
	}
	if len(re.Lost) == 0 && len(re.Failed) == 0 {
		return nil
	}
	return &re
}
