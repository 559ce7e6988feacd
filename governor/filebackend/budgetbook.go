package filebackend

import (
	"cmp"
	"crypto/subtle"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/eventkind"
	"github.com/governor-dev/governor/governor/internal/backendkit"
)

// budgetBook is a project's spend budgets, their open reservations and
// events: the twin of budget.lua's hashes. Instants are Unix
// milliseconds of the wall clock (Options.Wall).
type budgetBook struct {
	Budgets map[string]*budgetRec `json:"budgets"`
	Open    map[string]*budgetRes `json:"open,omitempty"`
	Events  []budgetEvent         `json:"events,omitempty"`
}

type budgetRec struct {
	Limit     int64  `json:"limit"`
	LiveLimit int64  `json:"live_limit,omitempty"`
	LiveBy    string `json:"live_by,omitempty"`
	Soft      int64  `json:"soft,omitempty"`
	Spent     int64  `json:"spent"`
	Reserved  int64  `json:"reserved"`
	// Carry is what was counted after End, before the next window
	// opened: the next window starts with it spent.
	Carry     int64  `json:"carry,omitempty"`
	Start     int64  `json:"start"`
	End       int64  `json:"end"`
	Born      int64  `json:"born"`
	Paused    string `json:"paused,omitempty"`
	Held      string `json:"held,omitempty"`
	Overruns  int64  `json:"overruns,omitempty"`
	Open      int64  `json:"open,omitempty"`
	SoftNoted bool   `json:"soft_noted,omitempty"`
	FullNoted bool   `json:"full_noted,omitempty"`
	// Defined: Limit and Soft were set, by the first reservation; no
	// later one changes them (budget.lua's "defined").
	Defined bool `json:"defined,omitempty"`
	// Def is the definition (unit, window) kept with the state
	// (governor.BudgetCharge.Def): set by the first reservation that
	// states one, changed only by an operator's define.
	Def string `json:"def,omitempty"`
}

type budgetRes struct {
	Expires int64          `json:"expires"`
	Charges []budgetAmount `json:"charges"`
	// Proof is the SHA-1 of the reservation's secret (governor.LeaseIDOf);
	// "" in one made before reservations had secrets.
	Proof string `json:"proof,omitempty"`
}

// proven reports whether secret proves o (budget.lua's proven twin).
func (o *budgetRes) proven(secret string) bool {
	return o.Proof == "" || subtle.ConstantTimeCompare([]byte(governor.LeaseIDOf(secret)), []byte(o.Proof)) == 1
}

type budgetAmount struct {
	Name   string `json:"name"`
	Amount int64  `json:"amount"`
}

type budgetEvent struct {
	At     int64  `json:"at"`
	Budget string `json:"budget"`
	Kind   string `json:"kind"`
	By     string `json:"by,omitempty"`
	Lease  string `json:"lease,omitempty"`
	Detail string `json:"detail,omitempty"`
}

func newBudgetBook() *budgetBook {
	return &budgetBook{Budgets: map[string]*budgetRec{}, Open: map[string]*budgetRes{}}
}

func (bk *budgetBook) event(now int64, budget, kind, by, lease, detail string) {
	bk.Events = append(bk.Events, budgetEvent{At: now, Budget: budget, Kind: kind, By: by, Lease: lease, Detail: detail})
	if n := len(bk.Events) - backendkit.MaxBudgetEvents; n > 0 {
		bk.Events = slices.Delete(bk.Events, 0, n)
	}
}

func (r *budgetRec) limit() int64 {
	if r.LiveBy != "" {
		return r.LiveLimit
	}
	return r.Limit
}

// count adds amount, counted at instant at (ms), to what r spent: to the
// window in force, or, when at is past its end, to the next one.
func (bk *budgetBook) count(name string, r *budgetRec, amount, at, now int64) {
	if at >= r.End {
		r.Carry += amount
	} else {
		r.Spent += amount
	}
	bk.soft(name, r, now)
}

// soft records the first crossing of r's soft threshold in a window.
func (bk *budgetBook) soft(name string, r *budgetRec, now int64) {
	if r.Soft > 0 && !r.SoftNoted && r.Spent+r.Reserved >= r.Soft {
		r.SoftNoted = true
		bk.event(now, name, eventkind.BudgetSoft, "", "", fmt.Sprintf("spent %d reserved %d of soft %d (limit %d)", r.Spent, r.Reserved, r.Soft, r.limit()))
	}
}

// prune counts every reservation past its expiry as spent at its
// estimate, in the window its expiry falls in (as a read showed it), in
// lease order (the order budget.lua's sorted set gives).
func (bk *budgetBook) prune(now int64) {
	var gone []string
	for id, o := range bk.Open {
		if o.Expires <= now {
			gone = append(gone, id)
		}
	}
	slices.SortFunc(gone, func(a, b string) int {
		return cmp.Or(cmp.Compare(bk.Open[a].Expires, bk.Open[b].Expires), cmp.Compare(a, b))
	})
	for _, id := range gone {
		for _, c := range bk.Open[id].Charges {
			if r := bk.Budgets[c.Name]; r != nil {
				r.Reserved -= c.Amount
				r.Open--
				bk.count(c.Name, r, c.Amount, bk.Open[id].Expires, now) // in the window its expiry falls in
				bk.event(now, c.Name, eventkind.BudgetAbandoned, "", id, fmt.Sprintf("unsettled after its ttl: counted at its estimate %d", c.Amount))
			}
		}
		delete(bk.Open, id)
	}
}

// roll opens window start..end once r's has ended at now (or r has
// none): what was counted after the last one ended starts it, and a
// loss hold ends. Before, r's window stays in force, whatever window
// the caller computed (another configuration's, the clock stepped back).
func (r *budgetRec) roll(now, start, end int64) {
	if now < r.End {
		return
	}
	r.Start, r.End = max(start, r.End), end // never before the old end: nothing counted twice
	r.Spent, r.Carry = r.Carry, 0
	r.SoftNoted, r.FullNoted, r.Held = false, false, ""
}

// ended shows r as it holds at now (ms), for a read: once its window has
// ended, the next one has begun with what counted after the end spent
// and no hold; its bounds are the caller's to compute (Start is the old
// End, End zero), as the next reserve's roll does.
func (r *budgetRec) ended(now int64) {
	if r.End != 0 && now >= r.End {
		r.Start, r.End = r.End, 0
		r.Spent, r.Carry, r.Held = r.Carry, 0, ""
	}
}

// reserve is BudgetReserve on bk at now (ms).
func (bk *budgetBook) reserve(req governor.BudgetRequest, now int64) (governor.BudgetResult, error) {
	bk.prune(now)
	res := governor.BudgetResult{Now: time.UnixMilli(now)}
	for _, c := range req.Charges {
		if now < c.Start.UnixMilli() || now >= c.End.UnixMilli() {
			res.Mismatch = true
			return res, nil
		}
	}
	if o := bk.Open[req.Lease]; o != nil {
		if !o.proven(req.Secret) {
			return governor.BudgetResult{}, governor.NotBudgetOwner(req.Project, req.Lease)
		}
		res.Allowed = true
		res.States = bk.states(req.Charges)
		return res, nil
	}
	for _, c := range req.Charges {
		// The definition is the state's (budget.lua's twin).
		if r := bk.Budgets[c.Name]; r != nil && c.Def != "" && r.Def != "" && r.Def != c.Def {
			res.Reason, res.Refused = "drift", bk.state(c.Name, r)
			res.States = bk.states(req.Charges)
			return res, nil
		}
	}
	for _, c := range req.Charges {
		r := bk.Budgets[c.Name]
		seen := c.Born.UnixMilli()
		lost := ""
		if c.Born.IsZero() {
			seen = 0
		}
		switch {
		case r == nil && seen > 0:
			lost = fmt.Sprintf("state gone since %d", seen)
		case r != nil && seen > 0 && r.Born > seen:
			lost = fmt.Sprintf("state born %d after %d", r.Born, seen)
		}
		if r == nil {
			r = &budgetRec{Born: now}
			bk.Budgets[c.Name] = r
		}
		r.roll(now, c.Start.UnixMilli(), c.End.UnixMilli())
		if lost != "" {
			r.Held = "evidence of lost data (" + lost + "); held until the window ends or an operator confirms"
			bk.event(now, c.Name, eventkind.BudgetHeld, req.By, req.Lease, lost)
		}
		if !r.Defined {
			r.Limit, r.Soft, r.Defined = c.Limit, c.Soft, true
		}
		if r.Def == "" {
			r.Def = c.Def
		}
	}
	for _, c := range req.Charges {
		r := bk.Budgets[c.Name]
		reason := ""
		switch {
		case r.Paused != "":
			reason = "paused"
		case r.Held != "":
			reason = "held"
		case r.Spent+r.Reserved+c.Amount > r.limit():
			reason = "exhausted"
			if !r.FullNoted {
				r.FullNoted = true
				bk.event(now, c.Name, eventkind.BudgetExhausted, req.By, req.Lease,
					fmt.Sprintf("estimate %d over spent %d reserved %d limit %d", c.Amount, r.Spent, r.Reserved, r.limit()))
			}
		}
		if reason != "" {
			res.Reason, res.Refused = reason, bk.state(c.Name, r)
			res.States = bk.states(req.Charges)
			return res, nil
		}
	}
	o := &budgetRes{Expires: now + cmpTTL(req.TTL).Milliseconds(), Proof: governor.LeaseIDOf(req.Secret)}
	for _, c := range req.Charges {
		r := bk.Budgets[c.Name]
		r.Reserved += c.Amount
		r.Open++
		o.Charges = append(o.Charges, budgetAmount{Name: c.Name, Amount: c.Amount})
		bk.soft(c.Name, r, now)
	}
	bk.Open[req.Lease] = o
	res.Allowed = true
	res.States = bk.states(req.Charges)
	return res, nil
}

func cmpTTL(d time.Duration) time.Duration {
	if d <= 0 {
		return governor.DefaultBudgetTTL
	}
	return d
}

// settle is BudgetSettle on bk at now (ms).
func (bk *budgetBook) settle(project, lease, secret string, actual []governor.BudgetAmount, by string, now int64) (governor.BudgetSettlement, error) {
	bk.prune(now)
	var out governor.BudgetSettlement
	o := bk.Open[lease]
	if o != nil && !o.proven(secret) {
		return out, governor.NotBudgetOwner(project, lease)
	}
	if o == nil {
		for _, a := range actual {
			r := bk.Budgets[a.Name]
			if a.Born.IsZero() || a.Name == "" {
				continue
			}
			seen := a.Born.UnixMilli()
			lost := ""
			switch {
			case r == nil:
				lost = fmt.Sprintf("state gone since %d", seen)
				r = &budgetRec{Born: now}
				bk.Budgets[a.Name] = r
			case r.Born > seen:
				lost = fmt.Sprintf("state born %d after %d", r.Born, seen)
			default:
				continue
			}
			r.Held = "evidence of lost data (" + lost + "); held until the window ends or an operator confirms"
			bk.event(now, a.Name, eventkind.BudgetHeld, by, lease, lost)
			bk.count(a.Name, r, a.Amount, now, now)
		}
		return out, nil
	}
	out.Settled = true
	for _, c := range o.Charges {
		r := bk.Budgets[c.Name]
		if r == nil {
			continue
		}
		amount, named := c.Amount, false
		for _, a := range actual {
			switch {
			case a.Name == c.Name:
				amount, named = a.Amount, true
			case a.Name == "" && !named:
				amount = a.Amount // every budget not named
			}
		}
		r.Reserved -= c.Amount
		r.Open--
		if amount > c.Amount {
			r.Overruns++
			out.Overruns = append(out.Overruns, c.Name)
			bk.event(now, c.Name, eventkind.BudgetOverrun, by, lease, fmt.Sprintf("actual %d above its estimate %d", amount, c.Amount))
		}
		bk.count(c.Name, r, amount, now, now)
	}
	delete(bk.Open, lease)
	return out, nil
}

// admin is BudgetAdmin on bk at now (ms).
func (bk *budgetBook) admin(name string, op governor.BudgetOp, value int64, by string, now int64) error {
	r := bk.Budgets[name]
	if r == nil {
		r = &budgetRec{Born: now}
		bk.Budgets[name] = r
	}
	detail := string(op)
	switch op {
	case governor.BudgetSetLimit:
		r.LiveLimit, r.LiveBy = value, by
		if value == 0 {
			r.LiveBy = ""
		}
		detail = fmt.Sprintf("limit %d", value)
	case governor.BudgetReset:
		r.Spent, r.Carry, r.SoftNoted, r.FullNoted = 0, 0, false, false
	case governor.BudgetPause:
		r.Paused = by
	case governor.BudgetResume:
		r.Paused = ""
	case governor.BudgetConfirm:
		r.Held = ""
	}
	if def, ok := strings.CutPrefix(string(op), string(governor.BudgetDefine(""))); ok {
		// An explicit apply: the window in force runs to its end with
		// its spent; the next follows def (roll). Its limit replaces an
		// operator's.
		was := r.Def
		if was == "" {
			was = "not stated"
		}
		detail = fmt.Sprintf("define %s (was %s), limit %d (was %d)", def, was, value, r.limit())
		r.Def, r.Limit, r.Defined, r.LiveLimit, r.LiveBy = def, value, true, 0, ""
	}
	bk.event(now, name, eventkind.BudgetAdmin, by, "", detail)
	return nil
}

func (bk *budgetBook) state(name string, r *budgetRec) governor.BudgetState {
	return governor.BudgetState{Name: name, Limit: r.limit(), LimitBy: r.LiveBy, Soft: r.Soft, Spent: r.Spent, Reserved: r.Reserved,
		Start: backendkit.BudgetInstant(r.Start), End: backendkit.BudgetInstant(r.End), Born: time.UnixMilli(r.Born), Paused: r.Paused, Held: r.Held,
		Overruns: r.Overruns, Open: r.Open, Def: r.Def}
}

func (bk *budgetBook) states(cs []governor.BudgetCharge) []governor.BudgetState {
	out := make([]governor.BudgetState, 0, len(cs))
	for _, c := range cs {
		if r := bk.Budgets[c.Name]; r != nil {
			out = append(out, bk.state(c.Name, r))
		}
	}
	return out
}
