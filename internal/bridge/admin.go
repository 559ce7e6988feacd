package bridge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/acquire"
	"github.com/governor-dev/governor/internal/exitcode"
	"github.com/governor-dev/governor/internal/view"
	"github.com/governor-dev/governor/internal/words"
)

// leaseSet is a Held of plain heartbeating leases: what a takeover took.
type leaseSet struct {
	leases []*governor.Lease
	nested []string
	anc    []acquire.HeldLease // the ancestors' leases, for Env
	lost   chan struct{}
	once   sync.Once
}

func newLeaseSet(ls []*governor.Lease) *leaseSet {
	h := &leaseSet{leases: ls, lost: make(chan struct{})}
	h.watch()
	return h
}

// watch closes h.lost once any of its leases is lost.
func (h *leaseSet) watch() {
	for _, l := range h.leases {
		go func() {
			<-l.Done()
			if errors.Is(l.Err(), governor.ErrLeaseLost) {
				h.once.Do(func() { close(h.lost) })
			}
		}()
	}
}

func (h *leaseSet) Leases() []*governor.Lease { return h.leases }
func (h *leaseSet) Nested() []string          { return h.nested }
func (h *leaseSet) Lost() <-chan struct{}     { return h.lost }

// Env is what a child needs to nest inside h: GOVERNOR_HELD and
// GOVERNOR_TOKEN naming the ancestors' leases and h's.
func (h *leaseSet) Env() []string {
	all := append([]acquire.HeldLease(nil), h.anc...)
	for _, l := range h.leases {
		all = append(all, acquire.HeldLease{Key: l.Key(), LeaseID: l.ID(), Secret: l.Handle().Secret, Token: l.Token()})
	}
	held, tokens := acquire.FormatHeld(all)
	return []string{acquire.EnvHeld + "=" + held, acquire.EnvToken + "=" + tokens}
}

func (h *leaseSet) Release(ctx context.Context) error {
	var first error
	for i := len(h.leases) - 1; i >= 0; i-- {
		if err := h.leases[i].Release(); err != nil && first == nil && !errors.Is(err, governor.ErrLeaseLost) {
			first = err
		}
	}
	return first
}

type takeoverArgs struct {
	Resource string  `json:"resource"`
	LeaseID  string  `json:"lease_id"`
	Session  string  `json:"session"`
	Force    bool    `json:"force"`
	TTL      Seconds `json:"ttl"`
	Limit    int     `json:"limit"`
}

type takenResult struct {
	Resource    string `json:"resource"`
	FromLeaseID string `json:"from_lease_id,omitempty"`
	FromSession string `json:"from_session,omitempty"`
	Token       int64  `json:"token"`
}

// opTakeover is 'governor takeover': the new leases are held by this
// bridge, with heartbeats, as one bridge lease.
func opTakeover(ctx context.Context, s *server, req request) (any, error) {
	var a takeoverArgs
	if err := decodeArgs(req.Args, &a); err != nil {
		return nil, err
	}
	o := governor.TakeoverOptions{LeaseID: a.LeaseID, Session: a.Session, Force: a.Force, TTL: a.TTL.D()}
	var got []*governor.Lease
	var err error
	switch {
	case a.LeaseID == "" && a.Session == "", a.LeaseID != "" && a.Session != "":
		return nil, badRequest("takeover needs one of lease_id and session")
	case a.Resource == "" && a.LeaseID != "":
		return nil, badRequest("takeover by lease_id needs its resource")
	case a.Resource == "":
		got, err = s.g.TakeoverSession(ctx, a.Session, o)
	default:
		limit, _, lerr := s.c.LimitFor(a.Resource, a.Limit)
		if lerr != nil {
			return nil, lerr
		}
		got, err = s.g.Takeover(ctx, a.Resource, limit, o)
	}
	if err != nil {
		if errors.Is(err, governor.ErrOwnerAlive) || errors.Is(err, governor.ErrNotHeld) {
			return nil, &protoError{kind: kindBusy, code: exitcode.Busy, msg: words.Message(err)}
		}
		return nil, err
	}
	l, res, err := s.add(newLeaseSet(got), nil)
	if err != nil {
		return nil, err
	}
	for _, gl := range got {
		res.Taken = append(res.Taken, takenResult{Resource: gl.Resource(), FromLeaseID: a.LeaseID, FromSession: a.Session, Token: gl.Token()})
	}
	return thenReply{result: res, then: func() { s.watch(l) }}, nil
}

type resourcesArgs struct {
	Resources []string `json:"resources"`
	Since     Seconds  `json:"since"`
}

// resources is names, or every resource of the project when it is empty.
func (s *server) resources(ctx context.Context, names []string) ([]string, error) {
	if len(names) > 0 {
		return names, nil
	}
	return s.g.Resources(ctx)
}

func opSlots(ctx context.Context, s *server, req request) (any, error) {
	var a resourcesArgs
	if err := decodeArgs(req.Args, &a); err != nil {
		return nil, err
	}
	names, err := s.resources(ctx, a.Resources)
	if err != nil {
		return nil, err
	}
	sts := make([]governor.Status, 0, len(names))
	for _, name := range names {
		st, err := s.g.Status(ctx, name)
		if err != nil {
			return nil, err
		}
		sts = append(sts, st)
	}
	return view.SlotsOf(s.g.Project(), sts, nil), nil
}

// opEvents is 'governor events --json': the events of the resources
// named (all when none), oldest first.
func opEvents(ctx context.Context, s *server, req request) (any, error) {
	var a resourcesArgs
	if err := decodeArgs(req.Args, &a); err != nil {
		return nil, err
	}
	var from time.Time
	if a.Since > 0 {
		from = time.Now().Add(-a.Since.D())
	}
	rows, err := view.ReadEvents(ctx, s.g, a.Resources, from)
	if err != nil {
		return nil, err
	}
	return map[string]any{"events": rows}, nil
}

type adminArgs struct {
	Resource string `json:"resource"`
	Waiter   string `json:"waiter"`
	Session  string `json:"session"`
	Limit    int    `json:"limit"`
	Clear    bool   `json:"clear"`
	By       string `json:"by"`
}

func decodeAdmin(req request) (adminArgs, error) {
	var a adminArgs
	if err := decodeArgs(req.Args, &a); err != nil {
		return a, err
	}
	if a.Resource == "" {
		return a, badRequest("%s needs a resource", req.Op)
	}
	return a, nil
}

func opCancel(ctx context.Context, s *server, req request) (any, error) {
	a, err := decodeAdmin(req)
	if err != nil {
		return nil, err
	}
	if (a.Waiter == "") == (a.Session == "") {
		return nil, badRequest("cancel needs one of waiter and session")
	}
	ws, err := s.g.Cancel(ctx, a.Resource, governor.CancelSelector{WaiterID: a.Waiter, Session: a.Session}, a.By)
	if err != nil {
		return nil, err
	}
	return map[string]int{"cancelled": len(ws)}, nil
}

func opPause(ctx context.Context, s *server, req request) (any, error) {
	a, err := decodeAdmin(req)
	if err != nil {
		return nil, err
	}
	return nil, s.g.Pause(ctx, a.Resource, a.By)
}

func opResume(ctx context.Context, s *server, req request) (any, error) {
	a, err := decodeAdmin(req)
	if err != nil {
		return nil, err
	}
	return nil, s.g.Resume(ctx, a.Resource, a.By)
}

func opLimit(ctx context.Context, s *server, req request) (any, error) {
	a, err := decodeAdmin(req)
	if err != nil {
		return nil, err
	}
	if a.Clear == (a.Limit != 0) {
		return nil, badRequest("limit needs one of limit (1 to %d) and clear", governor.MaxLimit)
	}
	return nil, s.g.SetLimit(ctx, a.Resource, a.Limit, a.By)
}

type providerArgs struct {
	Provider    string            `json:"provider"`
	Tokens      Count             `json:"tokens"`
	IfBusy      string            `json:"if_busy"`
	WaitTimeout Seconds           `json:"wait_timeout"`
	Lease       string            `json:"lease"`
	Outcome     string            `json:"outcome"`
	UsedTokens  *Count            `json:"used_tokens"`
	RetryAfter  Seconds           `json:"retry_after"`
	Status      int               `json:"status"`
	Headers     map[string]string `json:"headers"`
	// Budgets and Estimate: acquire's; Cost settles the lease's spend
	// reservation with the report (settle's cost).
	// Model and MaxTokens: acquire's (the configured budgets' scope, the
	// price table). Usage is the call's usage: without Cost, what it
	// costs at the price table's price of the call settles the lease's
	// spend reservation.
	Budgets   []BudgetArg `json:"budgets"`
	Estimate  *Amount     `json:"estimate"`
	Model     string      `json:"model"`
	MaxTokens Count       `json:"max_tokens"`
	Cost      *Amount     `json:"cost"`
	Usage     *usageArg   `json:"usage"`
	// Release releases the lease after the report, its spend
	// reservation settled with the release (provider_report).
	Release bool `json:"release"`
	// Env is provider_acquire's, as acquire's: the caller's nesting
	// variables (GOVERNOR_HELD, GOVERNOR_TOKEN), so that a call inside a
	// run holding the provider joins its hold.
	Env map[string]string `json:"env"`
}

func decodeProvider(req request) (providerArgs, error) {
	var a providerArgs
	if err := decodeArgs(req.Args, &a); err != nil {
		return a, err
	}
	if a.Provider == "" && req.Op != "provider_report" {
		return a, badRequest("%s needs a provider name, such as anthropic", req.Op)
	}
	return a, nil
}

// opProviderAcquire takes a provider's gate slot and rate reserve
// through the acquire pipeline (acquire with providers [NAME]).
func opProviderAcquire(ctx context.Context, s *server, req request) (any, error) {
	a, err := decodeProvider(req)
	if err != nil {
		return nil, err
	}
	return s.acquire(ctx, req.ID, AcquireArgs{Providers: []string{a.Provider}, Tokens: a.Tokens, IfBusy: a.IfBusy, WaitTimeout: a.WaitTimeout,
		Budgets: a.Budgets, Estimate: a.Estimate, Model: a.Model, MaxTokens: a.MaxTokens, Env: a.Env}, a.Provider)
}

// opProviderReport reports how a provider call ended (Provider.Report),
// learning from its response headers; with release, it then releases
// the lease, its spend reservation settled (at cost, else at its
// estimate) with the release of its slot: the gate's report, settle and
// release in one request and, on Redis, one round trip for the three
// writes a settle and a release make.
func opProviderReport(ctx context.Context, s *server, req request) (any, error) {
	a, err := decodeProvider(req)
	if err != nil {
		return nil, err
	}
	name := a.Provider
	if a.Cost != nil && a.Lease == "" {
		return nil, badRequest("provider_report's cost settles a lease's spend budgets: give the lease")
	}
	if a.UsedTokens != nil && a.Lease == "" {
		return nil, badRequest("provider_report's used_tokens settles a lease's token reservation: give the lease")
	}
	if a.Release && a.Lease == "" {
		return nil, badRequest("provider_report's release releases a lease: give the lease")
	}
	if a.UsedTokens != nil && *a.UsedTokens < 0 {
		return nil, badRequest("used_tokens %d; allowed: 0 or more", *a.UsedTokens)
	}
	if a.Outcome != "" && a.Outcome != "ok" && a.Outcome != "rate_limited" {
		// Before anything is settled: bad input changes nothing.
		return nil, badRequest("outcome %q; allowed: ok, rate_limited", a.Outcome)
	}
	var l *lease
	var spend *governor.BudgetReservation
	var actual []governor.BudgetAmount
	if a.Lease != "" {
		if l, err = s.lookup(a.Lease); err != nil {
			return nil, err
		}
		if name == "" {
			if name, err = l.provider(); err != nil {
				return nil, err
			}
		}
		if a.UsedTokens != nil {
			if err := l.reservedTokens(name); err != nil {
				return nil, err
			}
		}
		if a.Cost == nil && a.Usage != nil {
			if a.Cost, err = l.costOf(*a.Usage); err != nil {
				return nil, err
			}
		}
		if a.Cost != nil {
			if spend, actual, err = l.settlement(settleArgs{Cost: a.Cost}); err != nil {
				return nil, err
			}
		}
	}
	if name == "" {
		return nil, badRequest("provider_report needs a provider, or a lease of one")
	}
	if a.Release {
		return s.reportRelease(ctx, l, name, a, actual)
	}
	res := map[string]any{}
	if spend != nil {
		st, err := l.settle(ctx, spend, actual)
		if err != nil {
			return nil, err
		}
		res["settled"], res["overruns"] = st.Settled, st.Overruns
	}
	end, err := s.report(ctx, l, name, a)
	if err != nil {
		return nil, err
	}
	if !end.IsZero() {
		res["cooloff_until"] = end.UTC()
	}
	return res, nil
}

// reportRelease is provider_report with release: the report, then l's
// release with its settle at actual (nil: at the estimate). The lease
// is released whatever the report found; a settle that fails is the
// reply's error (the estimate stays counted), a lost lease is a lost
// error (its settle went alone).
func (s *server) reportRelease(ctx context.Context, l *lease, name string, a providerArgs, actual []governor.BudgetAmount) (any, error) {
	s.forget(l)
	end, rerr := s.report(ctx, l, name, a)
	held, why, st, serr := l.releaseSettle(actual)
	if serr != nil {
		serr = fmt.Errorf("the call's cost was not settled (it counts at its estimate): %w", serr)
	}
	if !held {
		if serr != nil {
			why += "; " + words.Message(serr)
		}
		return nil, lostError("lease %s (%s) was lost", l.id, why)
	}
	if err := errors.Join(rerr, serr); err != nil {
		return nil, err
	}
	res := map[string]any{}
	if !end.IsZero() {
		res["cooloff_until"] = end.UTC()
	}
	if spendOfHeld(l.held) != nil {
		res["settled"], res["overruns"] = st.Settled, st.Overruns
	}
	return res, nil
}

// report is what provider_report tells provider name of the call l
// guarded: the tokens it used (settling l's), its outcome (learning
// from a 429's headers); it returns the cool-off's end, zero when none.
func (s *server) report(ctx context.Context, l *lease, name string, a providerArgs) (time.Time, error) {
	p := s.g.Provider(name, s.c.ProviderLimits(name))
	if a.UsedTokens != nil {
		if err := l.settleTokens(ctx, p, name, int64(*a.UsedTokens)); err != nil {
			return time.Time{}, err
		}
	}
	var outcome error
	if a.Outcome == "rate_limited" {
		resp := &http.Response{StatusCode: a.Status, Header: http.Header{}}
		if resp.StatusCode == 0 {
			resp.StatusCode = http.StatusTooManyRequests
		}
		for k, v := range a.Headers {
			resp.Header.Set(k, v)
		}
		sig := governor.SignalFromHTTP(resp)
		if err := p.Learn(ctx, sig); err != nil {
			return time.Time{}, err
		}
		rl := governor.RateLimited{RetryAfter: a.RetryAfter.D(), Reason: "HTTP " + http.StatusText(resp.StatusCode)}
		if rl.RetryAfter == 0 {
			rl.RetryAfter = sig.RetryAfter
		}
		outcome = rl
	}
	return p.Report(ctx, outcome)
}

type backoffArgs struct {
	Provider   string  `json:"provider"`
	RetryAfter Seconds `json:"retry_after"`
}

// opBackoff is 'governor backoff': a provider's cool-off for everyone.
func opBackoff(ctx context.Context, s *server, req request) (any, error) {
	var a backoffArgs
	if err := decodeArgs(req.Args, &a); err != nil {
		return nil, err
	}
	if a.Provider == "" {
		return nil, badRequest("backoff needs a provider name, such as anthropic")
	}
	if a.RetryAfter.D() > governor.MaxRetryAfter {
		return nil, badRequest("retry_after %v; allowed: 0 (the default) to %v", a.RetryAfter.D(), governor.MaxRetryAfter)
	}
	p := s.g.Provider(a.Provider, s.c.ProviderLimits(a.Provider))
	end, err := p.Report(ctx, governor.RateLimited{RetryAfter: a.RetryAfter.D(), Reason: "governor bridge backoff"})
	if err != nil {
		return nil, err
	}
	return map[string]time.Time{"until": end.UTC()}, nil
}
