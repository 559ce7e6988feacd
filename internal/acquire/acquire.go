package acquire

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/humantime"
	"github.com/governor-dev/governor/governor/safetext"
	"github.com/governor-dev/governor/internal/mkdirslot"
)

// Events are what Acquire tells its caller as it goes. Nil fields are
// not told.
type Events struct {
	// OnQueued is told each time a wait is queued or moves.
	OnQueued func(resource string, r governor.Result)
	// OnNote is told the notes said at once, before any wait: a --limit
	// not applied, an ignored entry of the environment.
	OnNote func(msg string)
	// OnMkdirWait is told who holds a mkdir slot each time a wait for it
	// finds it held.
	OnMkdirWait func(msg string)
}

func (ev Events) note(msg string) {
	if ev.OnNote != nil {
		ev.OnNote(msg)
	}
}

// Held is what an Acquire holds: the leases it took, the mkdir slots it
// made, and what ancestors hold for it.
type Held struct {
	plan    *Plan
	leases  []*governor.Lease // taken here, in acquisition order
	slots   []heldSlot        // mkdir slots made here, in acquisition order
	ambient []HeldLease       // GOVERNOR_HELD as read, the leases this call took left out
	notes   []*LimitNote
	spend   *governor.BudgetReservation // the spend budgets' reservation (Spend)
	settle  *settleOnRelease            // a settle to send with the next release

	lostOnce sync.Once
	lost     chan struct{}

	mu sync.Mutex // guards leases once Acquire returned: Lost and Env may read them while a release runs
}

// taken is a copy of the leases still held by this call.
func (h *Held) taken() []*governor.Lease {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]*governor.Lease(nil), h.leases...)
}

// Leases are the leases this call took (not the nested ones), in
// acquisition order.
func (h *Held) Leases() []*governor.Lease { return h.taken() }

// Items are the plan's resources, each saying how it is held.
func (h *Held) Items() []*Item { return h.plan.items }

// Nested are the resources an ancestor holds, which this call did not
// take.
func (h *Held) Nested() []string {
	var out []string
	for _, it := range h.plan.items {
		if it.Nested {
			out = append(out, it.Name)
		}
	}
	return out
}

// LimitNotes are the notes that a --limit is not the limit in force.
func (h *Held) LimitNotes() []*LimitNote { return h.notes }

// Env is what a child's environment must say of the held leases:
// GOVERNOR_HELD and GOVERNOR_TOKEN (the ancestors' and this call's), and
// HEAVY_LOCK_HELD when this call made a mkdir slot (the pid it names).
func (h *Held) Env() []string {
	all := slices.Clone(h.ambient)
	for _, l := range h.taken() {
		all = append(all, HeldLease{Key: l.Key(), LeaseID: l.ID(), Secret: l.Handle().Secret, Token: l.Token()})
	}
	held, tokens := FormatHeld(all)
	env := []string{EnvHeld + "=" + held, EnvToken + "=" + tokens}
	if len(h.slots) > 0 {
		env = append(env, mkdirslot.EnvHeld+"="+strconv.Itoa(h.slots[0].pid))
	}
	return env
}

// Lost is closed once any lease this call took is lost.
func (h *Held) Lost() <-chan struct{} {
	h.lostOnce.Do(func() {
		h.lost = make(chan struct{})
		leases := h.taken()
		if len(leases) == 0 {
			return
		}
		cases := make(chan struct{}, len(leases))
		for _, l := range leases {
			go func() { <-l.Done(); cases <- struct{}{} }()
		}
		go func() { <-cases; close(h.lost) }()
	})
	return h.lost
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

// Release releases everything this call took, in reverse acquisition
// order, each mkdir slot just before its lease. It returns nil, or a
// *ReleaseError. Leases release with their own bounded context.
func (h *Held) Release(ctx context.Context) error { return h.ReleaseWith(ctx, nil) }

// ReleaseWith releases as Release does, asking before(l) first for each
// lease (nil: release all): ok false leaves that lease, and its mkdir
// slot, held (a run whose lease file an escaped process still holds);
// after, when not nil, is called once the lease is released.
func (h *Held) ReleaseWith(ctx context.Context, before func(*governor.Lease) (after func(), ok bool)) error {
	var re ReleaseError
	h.mu.Lock()
	leases := h.leases
	h.leases = nil
	ps := h.settle
	h.settle = nil
	h.mu.Unlock()
	for i := len(leases) - 1; i >= 0; i-- {
		l := leases[i]
		after := func() {}
		if before != nil {
			var ok bool
			if after, ok = before(l); !ok {
				continue // detached: left held
			}
		}
		if err := h.releaseSlot(l.Resource()); err != nil {
			re.Failed = append(re.Failed, err)
		}
		var err error
		if ps != nil {
			err = ps.with(l)
			ps = nil
		} else {
			err = l.Release()
		}
		if after != nil {
			after()
		}
		switch {
		case errors.Is(err, governor.ErrLeaseLost):
			re.Lost = append(re.Lost, l.Resource())
		case err != nil:
			re.Failed = append(re.Failed, fmt.Errorf("releasing %s: %w (it expires after its TTL)", l.Resource(), err))
		}
	}
	if ps != nil {
		ps.alone(ctx)
	}
	if len(re.Lost) == 0 && len(re.Failed) == 0 {
		return nil
	}
	return &re
}

// Acquire takes the plan's resources with g: what ancestors hold (proven,
// ProvenHeld) is skipped, the rest is taken in the lock order, a mkdir
// slot right after its resource's lease, then one request (and the token
// estimate) of each provider's rate budget. It waits per the plan's
// IfBusy, up to its WaitTimeout. On failure nothing is held and the
// error maps through exitcode.For (busy 73, skipped 75, superseded 76,
// else 125); ctx ending (a signal) withdraws every wait.
func (p *Plan) Acquire(ctx context.Context, g *governor.Governor, ev Events) (*Held, error) {
	h := &Held{plan: p}
	held, err := HeldFromEnv(p.req.Env)
	if err != nil {
		ev.note(fmt.Sprintf("ignoring a malformed entry of the environment: %v", err))
	}
	byKey := map[governor.Key]HeldLease{}
	for _, l := range held {
		byKey[l.Key] = l
	}
	mode := governor.Fail
	if p.ifBusy == IfBusyWait {
		mode = governor.Wait
	}
	anc, ancWeight, ancLimit, inside, err := execRunInside(ctx, g, byKey)
	if err != nil {
		return nil, err
	}
	if inside {
		// One item stands for what the ancestor's exec run holds (a
		// plain run wants the run lock and every join slot).
		first := true
		p.items = slices.DeleteFunc(p.items, func(it *Item) bool {
			drop := isExecRun(it.Name) && !first
			first = first && !isExecRun(it.Name)
			return drop
		})
	}
	var waitingFor string // the resource last queued for, for a --wait-timeout message
	notes := &limitNotes{ctx: ctx, g: g, h: h, ev: ev, asked: p.req.Limit}
	if msg := execRunLimitNote(p.items, p.req.Limit); msg != "" {
		ev.note(msg)
	}
	var wants []governor.Want
	for _, it := range p.items {
		k := governor.Key{Project: g.Project(), Resource: it.Name}
		if inside && isExecRun(it.Name) {
			// Part of the ancestor's exec run: this item is what the
			// ancestor holds (the run lock or a join slot, its weight).
			it.Name, it.Weight, it.Limit, it.Nested, it.Held = anc.Key.Resource, ancWeight, ancLimit, true, anc
			continue
		}
		if l, ok := byKey[k]; ok {
			err := ProvenHeld(ctx, g, l)
			if err == nil {
				it.Nested, it.Held = true, l
				continue
			}
			if !errors.Is(err, governor.ErrNotOwner) && !errors.Is(err, governor.ErrNotHeld) {
				return nil, err
			}
			ev.note(fmt.Sprintf("%s: %s; acquiring %s", EnvHeld, safetext.Escape(err.Error()), it.Name))
		}
		if err := p.storedLimit(ctx, g, it); err != nil {
			return nil, err
		}
		notes.due = append(notes.due, it)
		name := it.Name
		wants = append(wants, governor.Want{Resource: it.Name, AcquireOptions: governor.AcquireOptions{
			Limit: it.Limit, Weight: it.Weight, Exclusive: it.Exclusive, Mode: mode, TTL: p.req.TTL, NoHeartbeat: p.req.Detached,
			ProgressTimeout: p.req.ProgressTimeout,
			Policy:          it.Policy, Priority: p.req.Priority, FairKey: p.req.FairKey,
			Supersede: p.req.Supersede, CancelInProgress: p.req.CancelInProgress, CancelOthers: p.req.CancelOthers,
			OnQueued: func(res governor.Result) {
				waitingFor = name
				notes.flush()
				if ev.OnQueued != nil {
					ev.OnQueued(name, res)
				}
			},
		}})
	}
	if err := p.checkOrder(ctx, g, byKey, wants); err != nil {
		return nil, err
	}
	for key := range byKey {
		if !slices.ContainsFunc(wants, func(w governor.Want) bool { return w.Resource == key.Resource && key.Project == g.Project() }) {
			h.ambient = append(h.ambient, byKey[key])
		}
	}
	h.ambient = ambientInOrder(held, h.ambient)
	wctx := ctx
	var deadline time.Time
	if mode == governor.Wait && p.req.WaitTimeout > 0 {
		deadline = time.Now().Add(p.req.WaitTimeout)
		var cancel context.CancelFunc
		wctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	if len(wants) > 0 {
		start := time.Now()
		err := h.acquireAll(wctx, g, wants, mode, notes.before(ev))
		p.waited = time.Since(start)
		if err != nil {
			notes.flush()
			return nil, failed(ctx, g, err, p.ifBusy == IfBusySkip, p.req.WaitTimeout, waitingFor)
		}
		notes.granted()
	}
	ask := p.withRate
	if ask == nil {
		ask = p.spendAsk(deadline)
	}
	if h.spend, err = p.takeBudgets(wctx, g, mode, h.underLease(ask)); err != nil {
		_ = h.Release(context.WithoutCancel(ctx))
		return nil, err
	}
	if h.spend == nil {
		if h.spend, err = p.reserveSpend(ctx, g, h, deadline); err != nil {
			_ = h.Release(context.WithoutCancel(ctx))
			return nil, err
		}
	}
	if p.req.Detached {
		for _, l := range h.leases {
			l.Detach() // it lives by its TTL: closing the Governor keeps it
		}
	}
	return h, nil
}

// ambientInOrder keeps the entries of keep in the order GOVERNOR_HELD
// lists them.
func ambientInOrder(held, keep []HeldLease) []HeldLease {
	var out []HeldLease
	for _, l := range held {
		if slices.Contains(keep, l) {
			out = append(out, l)
		}
	}
	return out
}

// took records leases taken, and marks the plan's items.
func (h *Held) took(ls []*governor.Lease) {
	h.leases = append(h.leases, ls...)
	for _, l := range ls {
		for _, it := range h.plan.items {
			if it.Name == l.Resource() {
				it.Lease = l
			}
		}
	}
}

// takeBudgets takes one request (and the token estimate) of each
// provider's rate budget, after the slots. A spent budget is handled as
// a busy slot: fail 73, skip 75, wait until it allows (or
// --wait-timeout). With ask (nil: none), the last rate reservation's
// first try carries the reservation of ask's spend budgets
// (governor.Governor.TryRateBudgets: one round trip on Redis), which it
// returns; nil when they did not fit at once (the caller reserves them
// then, as ever: reserve) or there is no rate budget.
func (p *Plan) takeBudgets(ctx context.Context, g *governor.Governor, mode governor.Mode, ask *spendAsk) (*governor.BudgetReservation, error) {
	var spent *governor.BudgetReservation
	for i, rl := range p.rates {
		name := rl.Name
		req := governor.RateRequest{Key: governor.Key{Project: g.Project(), Resource: governor.ProviderResource(name)},
			Requests: rl.Requests, Tokens: rl.Tokens, NRequests: 1, NTokens: p.req.Tokens, Shadow: rl.Shadow}
		var res governor.RateResult
		tried := ask != nil && i == len(p.rates)-1
		if tried {
			var err error
			if res, spent, err = g.TryRateBudgets(ctx, req, ask.Spends, ask.Options); err != nil {
				return nil, err
			}
			if res.Allowed {
				continue
			}
		}
		if mode == governor.Wait {
			start := time.Now()
			err := g.WaitRate(ctx, req)
			p.waited += time.Since(start)
			switch {
			case err == nil:
				continue
			case errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil && p.req.WaitTimeout > 0:
				return nil, &NotAcquiredError{Msg: fmt.Sprintf("provider %s: rate budget not available within --wait-timeout %v", name, p.req.WaitTimeout)}
			}
			return nil, err
		}
		if !tried {
			var err error
			if res, err = g.TryRate(ctx, req); err != nil {
				return nil, err
			}
		}
		if !res.Allowed {
			na := &NotAcquiredError{Msg: fmt.Sprintf("provider %s: rate limit reached (%d requests / %d tokens per %v); retry after %v",
				name, rl.Requests.Rate, rl.Tokens.Rate, max(rl.Requests.Period, rl.Tokens.Period), res.RetryAfter.Round(time.Millisecond))}
			if !res.CoolOff.IsZero() {
				na.Msg = fmt.Sprintf("provider %s: %s", name, humantime.CoolOffNote(res.CoolOff, res.RetryAfter))
			}
			if p.ifBusy == IfBusySkip {
				na.Msg += "; skipped (--if-busy skip)"
				na.Skipped = true
			}
			return nil, na
		}
	}
	return spent, nil
}
