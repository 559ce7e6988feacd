package governor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/governor-dev/governor/governor/capacity"
)

// RateLimit is Rate per Period with at most Burst at once (default:
// Rate). A zero Rate means no limit.
type RateLimit struct {
	Rate   int64
	Period time.Duration
	Burst  int64
}

// PerMinute is a RateLimit of n per minute with the default burst.
func PerMinute(n int64) RateLimit { return RateLimit{Rate: n, Period: time.Minute} }

func (r RateLimit) validate(what string) error {
	if r.Rate < 0 || r.Burst < 0 {
		return invalid("%s rate %d burst %d; allowed: 0 (no limit) or more", what, r.Rate, r.Burst)
	}
	if r.Rate > 0 && (r.Period < time.Millisecond || r.Period > 24*time.Hour) {
		return invalid("%s period %v; allowed: 1ms to 24h", what, r.Period)
	}
	return nil
}

// RateRequest reserves budget under two limits at once — requests and
// tokens (RPM/TPM for an LLM provider). Both are charged, or neither.
type RateRequest struct {
	Key       Key // the rate key, e.g. provider:anthropic
	Requests  RateLimit
	Tokens    RateLimit
	NRequests int64 // usually 1
	NTokens   int64 // the estimate; settle the actual with RateAdjust
	// Shadow evaluates the limits without enforcing them: a reservation
	// they would deny is allowed, marked ShadowDenied and counted
	// (RateStatus.ShadowDenied), and charges nothing; one they allow is
	// charged as ever, so the decisions are those the limits would make.
	Shadow bool
	// Budget, when set, is a budget reservation (BudgetReserve) sent
	// with this one: on Redis one round trip (one pipeline, whose parts
	// go to their nodes at once on a Cluster), so that a call without a
	// slot reserves its budgets with its rate at no round trip of their
	// own. The parts are independent: each does what it does alone,
	// whatever the other decides, and the budget's outcome is in the
	// RateResult (Budget, BudgetErr), also when RateReserve returns an
	// error; bad budget input (ErrInvalid) reserves no budget and still
	// reserves the rate. A caller undoes the part it does not want.
	Budget *BudgetRequest
	// Share, when set, refreshes (or releases) a rate share of
	// Requests, or of Tokens with Share.Tokens, instead of reserving
	// (docs/capacity.md): the answer is RateResult.Share, nothing is
	// charged, and NRequests, NTokens, Shadow and Budget are not read.
	// While shares are held, a reservation without one is held to the
	// rate and burst they leave, and a settle of its tokens
	// (RateAdjust) is charged at the rate the tokens' shares leave.
	Share *capacity.RateAsk
	// Declaration names the process that holds the share (read only
	// with Share): a share whose declared process is proven dead on
	// this machine (OwnerVerdict) is reclaimed by the next refresh on
	// the machine that gets less than its part, as a dead holder's slot.
	Declaration Declaration
}

// RateAdjustment corrects the rate key Key after a call
// (RateBackend.RateAdjust): Delta more tokens (negative: refunds) under
// the limit Tokens, and the budget the provider reported.
type RateAdjustment struct {
	Key    Key
	Tokens RateLimit
	Delta  int64
	// Learned, when set, is a budget the provider reported (Learn).
	Learned *LearnedBudget
}

// RateResult is a decision: a denial is data, not an error.
type RateResult struct {
	Allowed bool
	// RetryAfter is how long until the same reservation could pass.
	RetryAfter time.Duration
	// Remaining budget after this reservation; -1 where unlimited.
	RemainingRequests int64
	RemainingTokens   int64
	// CoolOff, when the reservation was denied because the key is
	// cooling off (an eventkind.CoolOff Action), is the cool-off's end (backend
	// time); zero otherwise.
	CoolOff time.Time
	// ShadowDenied: a Shadow reservation the limits would have denied
	// (Allowed is true; RetryAfter says how long it would have waited).
	ShadowDenied bool
	// Budget and BudgetErr are the decision and the error of the budget
	// reservation sent with this one (RateRequest.Budget).
	Budget    BudgetResult
	BudgetErr error
	// Share is the answer to RateRequest.Share (Allowed true).
	Share *capacity.RateShare
}

// RateBackend is the optional capability of a backend for rate limits,
// which live in keys of their own beside the slots. Time is the
// backend's (the Redis server's, or this machine's monotonic clock).
type RateBackend interface {
	// RateReserve charges req if both dimensions allow it; otherwise it
	// changes nothing and says when to retry. A cost above a limit's
	// burst can never pass and is ErrTooHeavy.
	RateReserve(ctx context.Context, req RateRequest) (RateResult, error)
	// RateAdjust corrects a.Key's rate limit after a call: it charges
	// a.Delta more tokens (negative: refunds) under a.Tokens, when the
	// actual use is known, and records a.Learned (when set; the
	// adjustment is then made only when Delta is not 0). A learned
	// budget is one a provider's response reported: until each reported
	// reset (now + Reset, backend time), a reservation of a.Key passes
	// only if the reported remaining of that dimension still covers its
	// cost (besides its configured limits: the stricter decides), and
	// takes its cost off it; a denial says to retry at the reset. A later
	// report replaces an earlier one. A dimension not reported
	// (Remaining < 0 or Reset 0) is left as it is. The Governor checks
	// a.Learned.
	RateAdjust(ctx context.Context, a RateAdjustment) error
	// RateStatus reads key's rate limit without changing it. A key
	// never reserved has a zero RateStatus (with Key and Now set).
	RateStatus(ctx context.Context, key Key) (RateStatus, error)
	// Rates lists the rate keys of a project that have state, rate-only
	// providers (no concurrency slots) included.
	Rates(ctx context.Context, project string) ([]string, error)
}

// RateStatus is a rate limit as the backend keeps it, for metrics: the
// counters cover every process.
type RateStatus struct {
	Key Key
	// Requests and Tokens are the limits of the last reservation (zero
	// Rate: none of that kind).
	Requests RateLimit
	Tokens   RateLimit
	// Remaining budget now under those limits; -1 where unlimited.
	RemainingRequests int64
	RemainingTokens   int64
	// Allowed and Limited count the reservations granted and denied;
	// ShadowDenied the Shadow reservations the limits would have denied.
	Allowed      int64
	Limited      int64
	ShadowDenied int64
	// Shares are the live rate shares of the requests limit
	// (docs/capacity.md), by ID; Learning is the end of the key's
	// learning mode after a loss of its share state (zero: none now;
	// the later of the requests' and the tokens' shares).
	Shares   []capacity.RateHolder
	Learning time.Time
	// LocalGrants are the requests granted locally from rate shares, as
	// their refreshes report them (capacity.RateAsk's Granted, counted
	// by its Tally): none of them is in Allowed.
	LocalGrants int64
	// TokenShares are the live rate shares of the tokens limit
	// (capacity.RateAsk's Tokens), as Shares, their rates in tokens;
	// TokenLocalGrants the tokens taken locally from them, as their
	// refreshes report them.
	TokenShares      []capacity.RateHolder
	TokenLocalGrants int64
	// Now is the backend's clock when the status was read.
	Now time.Time
}

// Provider is the agent-side gate for one provider: a concurrency slot
// and a rate budget, taken in that order.
type Provider struct {
	g        *Governor
	limits   ProviderLimits
	resource string
}

// ProviderLimits configure a Provider. Zero fields mean no limit of
// that kind.
type ProviderLimits struct {
	MaxConcurrency int
	Requests       RateLimit
	Tokens         RateLimit
	// Adaptive, when set, makes MaxConcurrency the maximum of an
	// adaptive limit (see Adaptive).
	Adaptive *Adaptive
	// OnBackendDown is what calls do while the backend cannot be reached
	// (zero: closed, they wait for it as ever).
	OnBackendDown BackendDown
	// Shadow evaluates Requests and Tokens without enforcing them (see
	// RateRequest.Shadow): calls never wait for rate budget, and those
	// the limits would have held are counted (RateStatus.ShadowDenied).
	Shadow bool
}

// ProviderResourcePrefix starts the resource of every provider.
const ProviderResourcePrefix = "provider:"

// ProviderResource is the resource of provider name: "provider:NAME",
// for its concurrency slots and its rate keys.
func ProviderResource(name string) string { return ProviderResourcePrefix + name }

// Provider returns the gate for provider name (resource
// ProviderResource(name)).
func (g *Governor) Provider(name string, l ProviderLimits) *Provider {
	return &Provider{g: g, limits: l, resource: ProviderResource(name)}
}

// Do waits for a concurrency slot, then for rate budget for one request
// and estimate tokens, runs fn with a context cancelled if the lease is
// lost, settles the tokens fn reports it used, and releases the slot.
//
// When fn's error carries a RateLimited (see SignalFromHTTP), Do pauses
// the provider fleet-wide (Governor.CoolOff) for its RetryAfter, or the
// default: every Do, acquire and `governor run --provider` of the
// provider, in every process, waits for the cool-off to end, and then
// the queue hands out slots in order. Do returns fn's error.
//
// The slot comes first: a caller holding budget but waiting for a slot
// would waste budget that others could use, and the number waiting on
// the rate limit is then bounded by the concurrency.
func (p *Provider) Do(ctx context.Context, estimate int64, fn func(ctx context.Context) (used int64, err error)) error {
	return p.do(ctx, estimate, nil, BudgetOptions{}, func(ctx context.Context) (int64, int64, error) {
		used, err := fn(ctx)
		return used, 0, err
	})
}

// do is Do and DoSpend: the call's slot, rate and spends (reserved with
// o) are one Ask (Governor.Hold), fn reports the tokens it used and its
// actual cost, and the spend settle goes with the release of the
// call's slot (Held.SettleOnRelease), else with the token settle
// (settleTokens), else alone.
func (p *Provider) do(ctx context.Context, estimate int64, spends []BudgetSpend, o BudgetOptions,
	fn func(ctx context.Context) (usedTokens, actualCost int64, err error)) error {
	if err := ValidateResource(p.resource); err != nil {
		return err
	}
	if err := p.limits.Requests.validate("requests"); err != nil {
		return err
	}
	if err := p.limits.Tokens.validate("tokens"); err != nil {
		return err
	}
	if estimate < 0 {
		return invalid("token estimate %d; allowed: 0 or more", estimate)
	}
	if a := p.limits.Adaptive; a != nil {
		if _, err := a.Request(p.limits.MaxConcurrency); err != nil {
			return err
		}
	}
	pol := p.limits.OnBackendDown
	if pol.Local < 0 || pol.Local > MaxLimit || pol.Open && pol.Local != 0 {
		return invalid("on_backend_down open %v, local:%d; allowed: closed, open, or local:1 to local:%d", pol.Open, pol.Local, MaxLimit)
	}
	// Degraded mode (degraded.go): while this process finds the backend
	// down, calls go on as pol allows; each call first checks whether it
	// is back.
	degradedRun := func(cause error) error {
		d := p.g.enterDegraded(p.resource, pol, cause)
		_, err := p.g.runDegraded(ctx, d, pol, func(ctx context.Context) (int64, error) {
			return p.runAlone(ctx, spends, o, fn)
		})
		return err
	}
	if !pol.closed() && p.g.isDegraded(p.resource) {
		pctx, cancel := context.WithTimeout(ctx, degradedProbe)
		_, perr := p.g.b.Status(pctx, Key{p.g.project, p.resource})
		cancel()
		if perr != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return degradedRun(perr)
		}
		p.g.leaveDegraded(ctx, p.resource, pol)
	}
	// Every provider reserves, rate limits or not: the rate key also
	// applies the provider's cool-off and the budget learned from its
	// responses (Learn).
	ask := Ask{Rates: []RateRequest{p.rateRequest(estimate)}, Mode: Wait, Spends: spends, Budget: o}
	if p.limits.MaxConcurrency > 0 {
		ask.Wants = []Want{{Resource: p.resource, AcquireOptions: AcquireOptions{Limit: p.limits.MaxConcurrency, Mode: Wait,
			GiveUpOnBackendError: !pol.closed()}}}
	}
	h, err := p.g.Hold(ctx, ask)
	if !pol.closed() && isDown(ctx, err) {
		return degradedRun(err)
	}
	if err != nil {
		return err
	}
	var serr error // the spend settle's
	defer h.ReleaseWith(nil)
	work, cancel := h.context(ctx)
	defer cancel()
	used, actual, err := fn(work)
	actx, cancel := context.WithTimeout(context.Background(), DefaultReleaseTimeout)
	defer cancel()
	if aerr := p.settleTokens(actx, estimate, used, h, actual, &serr); aerr != nil && err == nil {
		err = aerr
	}
	if _, rerr := p.Report(actx, err); rerr != nil {
		if err == nil {
			err = rerr
		} else {
			err = fmt.Errorf("%w (%v)", err, rerr)
		}
	}
	h.ReleaseWith(nil)
	return joinSettle(err, serr)
}

// rateRequest is the reservation of one call of estimate tokens.
func (p *Provider) rateRequest(estimate int64) RateRequest {
	return RateRequest{Key: Key{p.g.project, p.resource}, Requests: p.limits.Requests, Tokens: p.limits.Tokens,
		NRequests: 1, NTokens: estimate, Shadow: p.limits.Shadow}
}

// SettleTokens settles a call's token reservation, estimate tokens, at
// used, the tokens it used, as Do does after each call: with a tokens
// limit the difference is charged (refunded when used is below the
// estimate), into the process's tokens share when the provider's
// tokens are leased (Options.Capacity; no round trip), else on the
// backend; without one nothing changes. A negative count is an
// ErrInvalid error and changes nothing. For callers that reserve and
// run the call themselves (the bridge's provider gates).
func (p *Provider) SettleTokens(ctx context.Context, estimate, used int64) error {
	if adjust, err := p.tokensToSettle(estimate, used); !adjust {
		return err
	}
	if p.g.settleLocalTokens(p.rateRequest(estimate), used-estimate) {
		return nil // into the tokens' share (caprate.go)
	}
	return p.g.rates.RateAdjust(ctx, RateAdjustment{Key: Key{p.g.project, p.resource}, Tokens: p.limits.Tokens, Delta: used - estimate})
}

// tokensToSettle says whether SettleTokens(estimate, used) has a
// difference to charge, or why it is bad input.
func (p *Provider) tokensToSettle(estimate, used int64) (bool, error) {
	if estimate < 0 || used < 0 {
		return false, invalid("tokens: estimate %d, used %d; allowed: 0 or more", estimate, used)
	}
	if p.limits.Tokens.Rate <= 0 || used == estimate {
		return false, nil
	}
	if err := ValidateResource(p.resource); err != nil {
		return false, err
	}
	if err := p.limits.Tokens.validate("tokens"); err != nil {
		return false, err
	}
	return true, nil
}

// Report tells the provider's fleet-wide state how a call ended, as Do
// does after each: an outcome carrying a RateLimited is a rate-limit
// signal (a cool-off for its RetryAfter, or the default, and with
// Adaptive one halving of the limit), nil a success (with Adaptive,
// counted towards one more slot), anything else nothing. It returns the
// end of the cool-off in force after a signal (backend time). For
// callers that run the call themselves (governor run, governor backoff).
func (p *Provider) Report(ctx context.Context, outcome error) (time.Time, error) {
	rl, limited := signalled(outcome)
	var end time.Time
	if limited {
		var err error
		if end, err = p.g.CoolOff(ctx, p.resource, rl.RetryAfter, rl.Reason); err != nil {
			return end, fmt.Errorf("the cool-off the rate-limit signal asks for was not recorded: %w", err)
		}
	}
	if a := p.limits.Adaptive; a != nil && (limited || outcome == nil) {
		req, err := a.Request(p.limits.MaxConcurrency)
		if err == nil {
			err = p.g.adapt(ctx, p.resource, req, limited)
		}
		if err != nil {
			return end, fmt.Errorf("the adaptive limit was not updated: %w", err)
		}
	}
	return end, nil
}

// tryRate reserves rate budget once: a denial is data (Allowed false,
// RetryAfter), and changes nothing.
func (g *Governor) tryRate(ctx context.Context, req RateRequest) (RateResult, error) {
	if err := ValidateResource(req.Key.Resource); err != nil {
		return RateResult{}, err
	}
	if req.Key.Project == "" {
		req.Key.Project = g.project
	}
	return g.rates.RateReserve(ctx, req)
}

// RateStatus reads the rate limit of key name (a provider's is
// "provider:NAME") without changing it (a key never reserved: a zero
// RateStatus with Key and Now set).
func (g *Governor) RateStatus(ctx context.Context, name string) (RateStatus, error) {
	if err := ValidateResource(name); err != nil {
		return RateStatus{}, err
	}
	return g.rates.RateStatus(ctx, Key{g.project, name})
}

// Rates lists the project's rate keys that have state.
func (g *Governor) Rates(ctx context.Context) ([]string, error) {
	return g.rates.Rates(ctx, g.project)
}

func (g *Governor) waitRate(ctx context.Context, req RateRequest) error {
	return g.waitRateAfter(ctx, req, 0)
}

// waitRateAfter is waitRate asking first after wait (a denial's
// RetryAfter).
func (g *Governor) waitRateAfter(ctx context.Context, req RateRequest, wait time.Duration) error {
	for {
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, ctx.Err()) {
					return cause
				}
				return ctx.Err()
			case <-t.C:
			}
		}
		res, err := g.rates.RateReserve(ctx, req)
		if err != nil {
			return err
		}
		if res.Allowed {
			return nil
		}
		wait = max(res.RetryAfter, time.Millisecond)
	}
}
