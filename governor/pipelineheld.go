package governor

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Held is what Governor.Hold took. ReleaseWith frees it and settles
// together.
type Held struct {
	// Leases are the leases taken, in acquisition order (ReleaseWith
	// frees them once).
	Leases []*Lease
	// Spend is the open spend reservation (nil: the Ask had no Spends):
	// settle it after the work (SettleOnRelease, or its SettleEach);
	// one never settled counts at its estimate once its TTL passes.
	Spend *BudgetReservation

	g         *Governor
	onRelease func(l *Lease) error

	mu       sync.Mutex // guards released and settle
	released bool
	settle   *settleOnRelease
}

// context returns a context cancelled when any lease held ends (with
// its error as the cause), for work that must stop with them.
func (h *Held) context(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	for _, l := range h.Leases {
		go func() {
			select {
			case <-l.Done():
				cancel(l.Err())
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

// SettleOnRelease has the next ReleaseWith settle r (the Held's Spend, or
// another reservation of this Governor) with actual (r.SettleEach: a
// budget not named at its estimate): sent with the release of the first
// lease freed (Backend.ReleaseSettle: on Redis no round trip of its own),
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

// ReleaseWith frees every lease held, in reverse acquisition order,
// with the settle asked for (SettleOnRelease), asking before(l) first
// for each (nil: free all): ok false leaves that lease held (a run whose
// lease file an escaped process still holds); after, when not nil, is
// called once it is freed. It returns the resources whose lease had
// been lost (their work may have overlapped another holder's) and the
// releases that failed otherwise (those leases expire after their
// TTL). A second ReleaseWith frees nothing.
func (h *Held) ReleaseWith(before func(*Lease) (after func(), ok bool)) (lost []string, failed []error) {
	h.mu.Lock()
	var leases []*Lease
	if !h.released {
		leases = h.Leases
	}
	h.released = true
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
				failed = append(failed, err)
			}
		}
		var err error
		if ps != nil {
			var st BudgetSettlement
			var serr error
			st, serr = l.releaseSettle(ps.r, ps.actual)
			err = st.ReleaseErr
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
			lost = append(lost, l.Resource())
		case err != nil:
			failed = append(failed, fmt.Errorf("releasing %s: %w (it expires after its TTL)", l.Resource(), err))
		}
	}
	if ps != nil {
		ps.done(ps.r.SettleEach(context.Background(), ps.actual))
	}
	return lost, failed
}
