package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/governor-dev/governor/config"
	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/acquire"
	"github.com/governor-dev/governor/internal/words"
)

// BudgetArg is a spend budget of acquire's budgets: given inline by a
// client (an object: governor.SpendBudget with amounts in units, not
// micro-units), or by name (a string: a budget of the bridge's
// configuration, Config.Budget).
type BudgetArg struct {
	Name  string `json:"name"`
	Limit Amount `json:"limit"`
	Unit  string `json:"unit"`
	Soft  Amount `json:"soft"`
	// Per (seconds, or a duration such as "24h") or Calendar ("day",
	// "month") in TZ (an IANA zone; default UTC): when it resets.
	Per      Per    `json:"per"`
	Calendar string `json:"calendar"`
	TZ       string `json:"tz"`
	// named: given by its name alone, a budget of the bridge's
	// configuration (server.planSpend).
	named bool
}

// UnmarshalJSON reads a budget given inline (an object) or by name (a
// string).
func (b *BudgetArg) UnmarshalJSON(data []byte) error {
	var name string
	if json.Unmarshal(data, &name) == nil {
		*b = BudgetArg{Name: name, named: true}
		return nil
	}
	if t := bytes.TrimSpace(data); len(t) == 0 || t[0] != '{' {
		return fmt.Errorf("budgets entry %s; allowed: the name of a configured budget (\"evals-day\") or a budget {name, limit, unit, per or calendar}", data)
	}
	type inline BudgetArg // without this method
	var v inline
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(&v); err != nil {
		return err
	}
	*b = BudgetArg(v)
	return nil
}

// planSpend plans the spend of a, a call of this bridge's session, as
// 'governor run --provider' plans its own (acquire.PlanCallSpend): the
// budgets given inline, those named (budgets.NAME of the bridge's
// configuration) and the configured budgets whose scope holds the call
// (its providers, model, fair key and session), the estimate given or
// priced by the price table from max_tokens. nil: the call asks no cost.
// Every error is bad input naming the value.
func (s *server) planSpend(a AcquireArgs) (*acquire.Spend, error) {
	var r acquire.CallSpend
	for _, b := range a.Budgets {
		if b.named {
			r.Budgets = append(r.Budgets, acquire.CallBudget{Name: b.Name})
			continue
		}
		sb, err := b.spendBudget()
		if err != nil {
			return nil, err
		}
		r.Budgets = append(r.Budgets, acquire.CallBudget{Inline: &sb})
	}
	if a.Estimate != nil {
		est, err := micro("estimate", *a.Estimate)
		if err != nil {
			return nil, err
		}
		r.Estimate = &est
	}
	r.MaxTokens, r.InputTokens = int64(a.MaxTokens), int64(a.Tokens)
	scope := config.SpendScope{Providers: a.Providers, Model: a.Model, FairKey: a.FairKey, Session: s.g.Session()}
	sp, err := acquire.PlanCallSpend(s.c.Spend, r, scope)
	if err != nil {
		return nil, badRequest("%s", words.Message(err))
	}
	return sp, nil
}

// Per is a budget window's length: a number of seconds, or a Go
// duration string ("24h", "90m").
type Per time.Duration

// UnmarshalJSON reads a number of seconds or a duration string.
func (p *Per) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("per %q: not a duration; allowed: seconds, or a duration such as \"24h\"", s)
		}
		*p = Per(d)
		return nil
	}
	var sec Seconds
	if err := sec.UnmarshalJSON(b); err != nil {
		return fmt.Errorf("per %s: allowed: seconds, or a duration such as \"24h\"", b)
	}
	*p = Per(sec)
	return nil
}

// spendBudget is b, a budget given inline, as the library keeps it.
// The library checks the budget (acquire.NewPlan); here only what the
// wire form adds: amounts and time zones.
func (b BudgetArg) spendBudget() (governor.SpendBudget, error) {
	var err error
	sb := governor.SpendBudget{Name: b.Name, Unit: b.Unit,
		Window: governor.BudgetWindow{Per: time.Duration(b.Per), Calendar: b.Calendar}}
	if sb.Limit, err = micro("budget "+b.Name+" limit", b.Limit); err != nil {
		return sb, err
	}
	if sb.Soft, err = micro("budget "+b.Name+" soft", b.Soft); err != nil {
		return sb, err
	}
	if b.TZ != "" {
		if b.Calendar == "" {
			return sb, badRequest("budget %s: tz %q without calendar; allowed: tz with calendar day or month", b.Name, b.TZ)
		}
		if sb.Window.Location, err = time.LoadLocation(b.TZ); err != nil {
			return sb, badRequest("budget %s: tz %q: %v; allowed: an IANA time zone such as Europe/Paris", b.Name, b.TZ, err)
		}
	}
	return sb, nil
}

// budgetResult is a budget as an acquire's result and a refusal tell it,
// amounts in units.
type budgetResult struct {
	Name     string    `json:"name"`
	Unit     string    `json:"unit,omitempty"`
	Spent    float64   `json:"spent"`
	Reserved float64   `json:"reserved"`
	Limit    float64   `json:"limit"`
	Reset    time.Time `json:"reset"`
	// Reason is why it refused: "exhausted", "paused" or "held".
	Reason   string   `json:"reason,omitempty"`
	Estimate *float64 `json:"estimate,omitempty"`
}

func budgetOf(st governor.BudgetState, unit string) budgetResult {
	return budgetResult{Name: st.Name, Unit: unit, Spent: units(st.Spent), Reserved: units(st.Reserved),
		Limit: units(st.Limit), Reset: st.End.UTC()}
}

// unitOf is the unit of budget name among bs.
func unitOf(bs []governor.SpendBudget, name string) string {
	for _, b := range bs {
		if b.Name == name {
			return b.Unit
		}
	}
	return ""
}

// refusalOf is the budget object of a spend budget's refusal, nil when
// err is none.
func refusalOf(err error) *budgetResult {
	var busy *governor.BudgetBusyError
	if !errors.As(err, &busy) {
		return nil
	}
	r := budgetOf(busy.Budget, busy.Unit)
	r.Reason = busy.Reason
	est := units(busy.Estimate)
	r.Estimate = &est
	return &r
}

// spender is a Held with a spend reservation (*acquire.Held).
type spender interface {
	Spend() *governor.BudgetReservation
}

// spendOfHeld is the open spend reservation of held, nil when none.
func spendOfHeld(held Held) *governor.BudgetReservation {
	if s, ok := held.(spender); ok {
		return s.Spend()
	}
	return nil
}

type settleArgs struct {
	Lease string            `json:"lease"`
	Cost  *Amount           `json:"cost"`
	Costs map[string]Amount `json:"costs"`
}

type settleResult struct {
	Settled  bool     `json:"settled"`
	Overruns []string `json:"overruns"`
}

// opSettle settles a lease's spend reservation: cost on every budget,
// or costs by budget (a budget not named: at its estimate), neither: at
// the estimate. Idempotent: a second settle changes nothing (settled
// false). A lost lease may still settle: the call it guarded may have
// run.
func opSettle(ctx context.Context, s *server, req request) (any, error) {
	var a settleArgs
	if err := decodeArgs(req.Args, &a); err != nil {
		return nil, err
	}
	l, err := s.lookup(a.Lease)
	if err != nil {
		return nil, err
	}
	r, actual, err := l.settlement(a)
	if err != nil {
		return nil, err
	}
	return l.settle(ctx, r, actual)
}

// settlement is l's spend reservation and the actual cost a settle's
// args give it (nil: every budget at its estimate); bad args are an
// error and change nothing.
func (l *lease) settlement(a settleArgs) (*governor.BudgetReservation, []governor.BudgetAmount, error) {
	r := spendOfHeld(l.held)
	if r == nil {
		return nil, nil, badRequest("lease %s reserved no spend budget; allowed: a lease acquired with budgets and an estimate", l.id)
	}
	if a.Cost != nil && a.Costs != nil {
		return nil, nil, badRequest("settle takes one of cost (every budget) and costs (by budget)")
	}
	var actual []governor.BudgetAmount
	for _, st := range r.States {
		v, ok := a.Costs[st.Name]
		if a.Cost != nil {
			v, ok = *a.Cost, true
		}
		if !ok {
			continue
		}
		m, err := micro("budget "+st.Name+" cost", v)
		if err != nil {
			return nil, nil, err
		}
		actual = append(actual, governor.BudgetAmount{Name: st.Name, Amount: m})
	}
	if len(actual) != len(a.Costs) && a.Cost == nil {
		return nil, nil, badRequest("settle costs name a budget lease %s did not reserve; allowed: %s", l.id, budgetNames(r))
	}
	return r, actual, nil
}

func budgetNames(r *governor.BudgetReservation) string {
	var names []string
	for _, st := range r.States {
		names = append(names, st.Name)
	}
	return strings.Join(names, ", ")
}

// settle settles r, l's reservation, with actual (nil: every budget at
// its estimate), once: a later settle changes nothing.
func (l *lease) settle(ctx context.Context, r *governor.BudgetReservation, actual []governor.BudgetAmount) (settleResult, error) {
	l.mu.Lock()
	done := l.settled
	l.settled = true
	l.mu.Unlock()
	if done {
		return settleResult{Overruns: []string{}}, nil
	}
	st, err := r.SettleEach(ctx, actual)
	if err != nil {
		l.mu.Lock()
		l.settled = false // not settled: release counts it at its estimate
		l.mu.Unlock()
		return settleResult{}, err
	}
	if st.Overruns == nil {
		st.Overruns = []string{}
	}
	return settleResult{Settled: st.Settled, Overruns: st.Overruns}, nil
}

// settleAtEstimate settles l's reservation at its estimate unless the
// client settled it: a lease released unsettled spent what it reserved
// (spend is never under-counted).
func (l *lease) settleAtEstimate() {
	if r := spendOfHeld(l.held); r != nil {
		_, _ = l.settle(context.Background(), r, nil)
	}
}

// releaseSettler is a Held that sends a settle with its release
// (*acquire.Held).
type releaseSettler interface {
	SettleOnRelease(r *governor.BudgetReservation, actual []governor.BudgetAmount, done func(governor.BudgetSettlement, error))
}

// settleWithRelease releases l's Held with its reservation settled at
// actual (nil: at its estimate) unless settled before: the settle goes
// with the release of its slot (no round trip of its own on Redis) where
// the Held can send it so, else alone first.
func (l *lease) settleWithRelease(actual []governor.BudgetAmount) (settleResult, error) {
	r := spendOfHeld(l.held)
	rs, ok := l.held.(releaseSettler)
	if r == nil || !ok {
		var st settleResult
		var err error
		if r != nil {
			st, err = l.settle(context.Background(), r, actual)
		}
		releaseHeld(l.held)
		return st, err
	}
	l.mu.Lock()
	done := l.settled
	l.settled = true
	l.mu.Unlock()
	res, serr := settleResult{Overruns: []string{}}, error(nil)
	if !done {
		// done is called by the release (Held.ReleaseWith), before it returns.
		rs.SettleOnRelease(r, actual, func(st governor.BudgetSettlement, err error) {
			if err != nil {
				l.mu.Lock()
				l.settled = false // not settled: the estimate stays counted, by its TTL
				l.mu.Unlock()
				serr = err
				return
			}
			res.Settled = st.Settled
			if st.Overruns != nil {
				res.Overruns = st.Overruns
			}
		})
	}
	releaseHeld(l.held)
	return res, serr
}

// budgetsOf is what an acquire's result says of its reservation.
func budgetsOf(r *governor.BudgetReservation, bs []governor.SpendBudget) []budgetResult {
	if r == nil {
		return nil
	}
	out := make([]budgetResult, 0, len(r.States))
	for _, st := range r.States {
		out = append(out, budgetOf(st, unitOf(bs, st.Name)))
	}
	return out
}

var (
	_ spender        = (*acquire.Held)(nil)
	_ releaseSettler = (*acquire.Held)(nil)
)

// usageArg is a call's usage as provider_report tells it (the shape of
// governor.Usage: input_tokens excludes cached_input_tokens).
type usageArg struct {
	InputTokens       Count `json:"input_tokens"`
	CachedInputTokens Count `json:"cached_input_tokens"`
	OutputTokens      Count `json:"output_tokens"`
}

// costOf is what u costs, in units, at the price table's price of the
// call l guarded, for the settle of its spend reservation: nil (settled
// at its estimate) when l reserved no spend or the table has no price
// for the call. A negative count, or one whose cost passes
// governor.MaxBudgetAmount, is bad input.
func (l *lease) costOf(u usageArg) (*Amount, error) {
	if u.InputTokens < 0 || u.CachedInputTokens < 0 || u.OutputTokens < 0 {
		return nil, badRequest("usage %+v; allowed: token counts of 0 or more", u)
	}
	l.mu.Lock()
	p := l.price
	l.mu.Unlock()
	if p == nil || spendOfHeld(l.held) == nil {
		return nil, nil
	}
	v, err := p.Cost(governor.Usage{InputTokens: int64(u.InputTokens), CachedInputTokens: int64(u.CachedInputTokens),
		OutputTokens: int64(u.OutputTokens)})
	if err != nil {
		return nil, fmt.Errorf("usage: %w", err)
	}
	c := amountOf(v)
	return &c, nil
}
