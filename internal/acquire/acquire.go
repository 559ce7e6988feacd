package acquire

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/governor-dev/governor/config"
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

// Held is what an Acquire holds: what the library's pipeline took
// (governor.Held: the leases, the spend reservation), the mkdir slots
// made beside the leases, and what ancestors hold for it.
type Held struct {
	plan    *Plan
	gh      *governor.Held
	taking  []*governor.Lease // the leases taken so far, until gh is set (takeSlots)
	slots   []heldSlot        // mkdir slots made here, in acquisition order
	ambient []HeldLease       // GOVERNOR_HELD as read, the leases this call took left out
	notes   []*LimitNote

	lostOnce sync.Once
	lost     chan struct{}
}

// Leases are the leases this call took (not the nested ones), in
// acquisition order.
func (h *Held) Leases() []*governor.Lease { return h.gh.Leases }

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
	for _, l := range h.Leases() {
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
		if len(h.gh.Leases) == 0 {
			return
		}
		cases := make(chan struct{}, len(h.gh.Leases))
		for _, l := range h.gh.Leases {
			go func() { <-l.Done(); cases <- struct{}{} }()
		}
		go func() { <-cases; close(h.lost) }()
	})
	return h.lost
}

// Spend is the open spend reservation this call made (nil: it asked
// for no budget): settle it after the work (SettleOnRelease, or its
// SettleEach); one never settled counts at its estimate once its TTL
// passes.
func (h *Held) Spend() *governor.BudgetReservation { return h.gh.Spend }

// SettleOnRelease settles r with actual (r.SettleEach) with the next
// ReleaseWith: sent with the release of its first lease (on Redis no
// round trip of its own), or alone when it releases no lease. done is
// told the outcome; a settle that fails leaves the estimate counted.
func (h *Held) SettleOnRelease(r *governor.BudgetReservation, actual []governor.BudgetAmount, done func(governor.BudgetSettlement, error)) {
	h.gh.SettleOnRelease(r, actual, done)
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
func (h *Held) ReleaseWith(_ context.Context, before func(*governor.Lease) (after func(), ok bool)) error {
	lost, failed := h.gh.ReleaseWith(before)
	if len(lost) == 0 && len(failed) == 0 {
		return nil
	}
	return &ReleaseError{Lost: lost, Failed: failed}
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
	var deadline time.Time
	if mode == governor.Wait && p.req.WaitTimeout > 0 {
		deadline = time.Now().Add(p.req.WaitTimeout)
	}
	slotsTaken := len(wants) == 0
	ask := governor.Ask{Wants: wants, Rates: p.rateRequests(g), Mode: mode, Deadline: deadline,
		Spends: p.spends(), Budget: p.budget, BudgetUnderLease: true, Within: p.within,
		Slots: func(ctx context.Context, wants []governor.Want) ([]*governor.Lease, error) {
			if err := h.takeSlots(ctx, g, wants, mode, notes.before(ev)); err != nil {
				return nil, err
			}
			slotsTaken = true
			h.mark()
			notes.granted()
			return h.taking, nil
		},
		OnRelease: func(l *governor.Lease) error { return h.releaseSlot(l.Resource()) },
	}
	ask.Budget.Mode = mode
	start := time.Now()
	gh, err := g.Hold(ctx, ask)
	if p.waited = 0; len(ask.Wants)+len(ask.Rates)+len(ask.Spends) > 0 {
		p.waited = time.Since(start)
	}
	if err != nil && !slotsTaken {
		notes.flush()
		return nil, failed(ctx, g, err, p.ifBusy == IfBusySkip, p.req.WaitTimeout, waitingFor)
	}
	if err != nil {
		return nil, p.refused(err)
	}
	h.gh, h.taking = gh, nil
	if p.req.Detached {
		for _, l := range gh.Leases {
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

// mark marks the plan's items with the leases taken.
func (h *Held) mark() {
	for _, l := range h.taking {
		for _, it := range h.plan.items {
			if it.Name == l.Resource() {
				it.Lease = l
			}
		}
	}
}

// rateRequests are one request (and the token estimate) of each
// provider's rate budget, taken after the slots.
func (p *Plan) rateRequests(g *governor.Governor) []governor.RateRequest {
	var out []governor.RateRequest
	for _, rl := range p.rates {
		out = append(out, governor.RateRequest{Key: governor.Key{Project: g.Project(), Resource: governor.ProviderResource(rl.Name)},
			Requests: rl.Requests, Tokens: rl.Tokens, NRequests: 1, NTokens: p.req.Tokens, Shadow: rl.Shadow})
	}
	return out
}

// refused is the error of a rate or spend budget that refused (as a
// busy slot is: fail 73, skip 75, a wait bounded by --wait-timeout),
// else err.
func (p *Plan) refused(err error) error {
	var rb *governor.RateBusyError
	var busy *governor.BudgetBusyError
	switch {
	case errors.As(err, &rb):
		return p.rateRefused(rb)
	case errors.As(err, &busy):
		return p.budgetRefused(busy)
	}
	return err
}

// rateRefused is the NotAcquiredError of a provider's spent rate budget.
func (p *Plan) rateRefused(rb *governor.RateBusyError) error {
	name := strings.TrimPrefix(rb.Key.Resource, governor.ProviderResourcePrefix)
	if rb.TimedOut {
		return &NotAcquiredError{Msg: fmt.Sprintf("provider %s: rate budget not available within --wait-timeout %v", name, p.req.WaitTimeout)}
	}
	var rl config.ProviderDef
	for _, d := range p.rates {
		if d.Name == name {
			rl = d
		}
	}
	res := rb.Result
	na := &NotAcquiredError{Msg: fmt.Sprintf("provider %s: rate limit reached (%d requests / %d tokens per %v); retry after %v",
		name, rl.Requests.Rate, rl.Tokens.Rate, max(rl.Requests.Period, rl.Tokens.Period), res.RetryAfter.Round(time.Millisecond))}
	if !res.CoolOff.IsZero() {
		na.Msg = fmt.Sprintf("provider %s: %s", name, humantime.CoolOffNote(res.CoolOff, res.RetryAfter))
	}
	if p.ifBusy == IfBusySkip {
		na.Msg += "; skipped (--if-busy skip)"
		na.Skipped = true
	}
	return na
}
