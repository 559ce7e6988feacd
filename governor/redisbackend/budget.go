package redisbackend

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/internal/backendkit"
	scripts "github.com/governor-dev/governor/scripts-lua"
)

var budgetScript = newScript(func() string { return scripts.Budget })

// BudgetKeys are the keys of project's spend budgets: the budgets, the
// open reservations, their expiries and the events. They share one hash
// tag, "PROJECT/{budgets", which no resource's tag can equal (a resource
// name has no '{'), so one script checks and charges several budgets on
// Cluster too.
func BudgetKeys(project string) []string {
	base := Prefix + "{" + project + "/{budgets}:"
	return []string{base + "b", base + "open", base + "exp", base + "events"}
}

func (b *Backend) budgetRun(ctx context.Context, op, project string, args ...any) (any, error) {
	if b.closed.Load() {
		return nil, governor.ErrClosed
	}
	v, err := budgetScript.Run(ctx, b.rdb, BudgetKeys(project), append([]any{op, backendkit.MaxBudgetEvents}, args...)...).Result()
	return v, wrap("budget "+op, err)
}

func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// BudgetReserve implements governor.BudgetBackend.
func (b *Backend) BudgetReserve(ctx context.Context, req governor.BudgetRequest) (governor.BudgetResult, error) {
	if err := governor.ValidateBudgetRequest(req); err != nil {
		return governor.BudgetResult{}, err
	}
	v, err := b.budgetRun(ctx, "reserve", req.Project, b.budgetReserveArgs(req)...)
	return b.budgetReserved(req, v, err)
}

// budgetReserveArgs are budget.lua reserve's arguments after the mode
// and the events cap; each budget's birth is the later of the caller's
// and the machine's witness (Witness).
func (b *Backend) budgetReserveArgs(req governor.BudgetRequest) []any {
	ttl := req.TTL
	if ttl <= 0 {
		ttl = governor.DefaultBudgetTTL
	}
	args := []any{req.Lease, ttl.Milliseconds(), req.By, req.Secret, len(req.Charges)}
	for _, c := range req.Charges {
		args = append(args, c.Name, c.Limit, c.Soft, c.Start.UnixMilli(), c.End.UnixMilli(), c.Amount,
			max(ms(c.Born), b.wit.seen('b', witnessKey(req.Project, c.Name))), c.Def)
	}
	return args
}

// budgetReserved reads budget.lua reserve's reply v (err: the call's
// error, wrapped), and witnesses the births of the budgets it gives.
func (b *Backend) budgetReserved(req governor.BudgetRequest, v any, err error) (governor.BudgetResult, error) {
	res, err := budgetReply(req, v, err)
	if err == nil && res.Allowed {
		b.reserved(req)
	}
	for _, st := range res.States {
		b.wit.saw('b', witnessKey(req.Project, st.Name), ms(st.Born))
	}
	return res, err
}

// budgetReply reads budget.lua reserve's reply v (see budgetReserved).
func budgetReply(req governor.BudgetRequest, v any, err error) (governor.BudgetResult, error) {
	if err != nil {
		return governor.BudgetResult{}, err
	}
	r := &reader{op: "budget reserve", key: governor.Key{Project: req.Project, Resource: "{budgets}"}}
	l := r.list(v, "the reply")
	if !r.length(l, 3, true) || (len(l)-3)%2 != 0 {
		r.fail("%d fields; want 3 and pairs", len(l))
		return governor.BudgetResult{}, r.err
	}
	verdict := r.str(l[0], "the verdict")
	res := governor.BudgetResult{Now: time.UnixMilli(r.int(l[1], "the time")), Allowed: verdict == "ok", Mismatch: verdict == "mismatch"}
	refused := r.str(l[2], "the refusing budget")
	for i := 3; i+1 < len(l); i += 2 {
		st := r.budget(r.str(l[i], "a budget's name"), l[i+1])
		res.States = append(res.States, st)
		if st.Name == refused {
			res.Refused = st
		}
	}
	switch verdict {
	case "ok", "mismatch":
	case "notowner":
		return governor.BudgetResult{}, governor.NotBudgetOwner(req.Project, req.Lease)
	case "exhausted", "paused", "held", "drift":
		res.Reason = verdict
	default:
		r.fail("verdict %s", show(verdict))
	}
	if r.err != nil {
		return governor.BudgetResult{}, r.err
	}
	return res, nil
}

// budget reads a budget's record (budget.lua: JSON, numbers as strings).
func (r *reader) budget(name string, v any) governor.BudgetState {
	var rec map[string]string
	if err := json.Unmarshal([]byte(r.str(v, "the record of budget "+name)), &rec); err != nil {
		r.fail("the record of budget %s: %v", name, err)
		return governor.BudgetState{}
	}
	n := func(f string) int64 {
		x, err := strconv.ParseInt(rec[f], 10, 64)
		if err != nil {
			r.fail("budget %s field %s is %s", name, f, show(rec[f]))
		}
		return x
	}
	st := governor.BudgetState{Name: name, Limit: n("limit"), LimitBy: rec["live_by"], Soft: n("soft"), Spent: n("spent"),
		Reserved: n("reserved"), Start: backendkit.BudgetInstant(n("start")), End: backendkit.BudgetInstant(n("end")), Born: time.UnixMilli(n("born")),
		Paused: rec["paused"], Held: rec["held"], Overruns: n("overruns"), Open: n("open"), Def: rec["def"]}
	if st.LimitBy != "" {
		st.Limit = n("live")
	}
	return st
}

// BudgetSettle implements governor.BudgetBackend: the settle and what
// is sent with it (req.Release, req.Adjust) in one pipeline
// (batcher.send), each script call keeping its own reply.
func (b *Backend) BudgetSettle(ctx context.Context, req governor.SettleRequest) (governor.BudgetSettlement, error) {
	if err := governor.ValidateBudgetSettle(req.Project, req.Lease, req.Actual); err != nil {
		var out governor.BudgetSettlement
		if r := req.Release; r != nil {
			out.ReleaseErr = b.Release(ctx, governor.Key{Project: req.Project, Resource: r.Resource}, r.ID, r.Secret)
		}
		if req.Adjust != nil {
			out.AdjustErr = b.RateAdjust(ctx, *req.Adjust)
		}
		return out, err
	}
	if b.closed.Load() {
		out := governor.BudgetSettlement{}
		if req.Release != nil {
			out.ReleaseErr = governor.ErrClosed
		}
		if req.Adjust != nil {
			out.AdjustErr = governor.ErrClosed
		}
		return out, governor.ErrClosed
	}
	bk := BudgetKeys(req.Project)
	set := &call{ctx: ctx, s: budgetScript, keys: &resourceKeys{keys: bk, boxed: box(bk)},
		args: append([]any{"settle", backendkit.MaxBudgetEvents}, b.settleArgs(req.Project, req.Lease, req.Secret, req.By, req.Actual)...),
		done: make(chan struct{})}
	calls := []*call{set}
	var rel, adj *call
	var r *resourceKeys
	relKey := governor.Key{Project: req.Project}
	if l := req.Release; l != nil {
		relKey.Resource = l.Resource
		r = b.resource(relKey)
		rel = &call{ctx: ctx, s: releaseScript, keys: r, args: []any{l.ID, l.Secret, b.channelArg}, done: make(chan struct{})}
		calls = append([]*call{rel}, calls...)
	}
	if a := req.Adjust; a != nil {
		rk := b.rateCallKeys(a.Key)
		adj = &call{ctx: ctx, s: rateScript, keys: &resourceKeys{keys: rk, boxed: box(rk)}, args: rateAdjustArgs(a.Tokens, a.Delta),
			done: make(chan struct{})}
		calls = append([]*call{adj}, calls...)
	}
	sent := time.Now()
	b.batch.send(calls)
	v, err := set.cmd.Result()
	st, serr := settled(req.Project, req.Lease, v, wrap("budget settle", err))
	if rel != nil {
		st.ReleaseErr = b.released(relKey, r, req.Release.ID, rel.cmd, sent)
	}
	if adj != nil {
		st.AdjustErr = wrap("rate adjust", adj.cmd.Err())
	}
	return st, serr
}

// settleArgs are budget.lua settle's arguments. Each budget's birth is
// the later of the caller's and the machine's witness (Witness); an
// amount for every budget not named (”) names each budget of project
// the machine witnessed too, so that a settle that finds its
// reservation gone (`governor settle` after a loss) has the evidence.
func (b *Backend) settleArgs(project, lease, secret, by string, actual []governor.BudgetAmount) []any {
	b.spends.Delete(spendRef{project, lease}) // settled: nothing left to renew
	args := []any{lease, by, secret, 0}
	n := 0
	add := func(name string, amount, born int64) {
		args = append(args, name, amount, max(born, b.wit.seen('b', witnessKey(project, name))))
		n++
	}
	for _, a := range actual {
		add(a.Name, a.Amount, ms(a.Born))
	}
	for _, a := range actual {
		if a.Name != "" {
			continue
		}
		for name := range b.wit.projectBudgets(project) {
			if !slices.ContainsFunc(actual, func(x governor.BudgetAmount) bool { return x.Name == name }) {
				add(name, a.Amount, 0)
			}
		}
		break
	}
	args[3] = n
	return args
}

// settled reads budget.lua settle's reply v to lease's settle (err: the
// call's error).
func settled(project, lease string, v any, err error) (governor.BudgetSettlement, error) {
	if err != nil {
		return governor.BudgetSettlement{}, err
	}
	if v == "notowner" {
		return governor.BudgetSettlement{}, governor.NotBudgetOwner(project, lease)
	}
	r := &reader{op: "budget settle", key: governor.Key{Project: project, Resource: "{budgets}"}}
	l := r.list(v, "the reply")
	if !r.length(l, 1, true) {
		return governor.BudgetSettlement{}, r.err
	}
	out := governor.BudgetSettlement{Settled: r.int(l[0], "the verdict") == 1}
	for _, x := range l[1:] {
		out.Overruns = append(out.Overruns, r.str(x, "an overrun budget"))
	}
	return out, r.err
}

// BudgetAdmin implements governor.BudgetBackend.
func (b *Backend) BudgetAdmin(ctx context.Context, project, name string, op governor.BudgetOp, value int64, by string) error {
	if err := governor.ValidateBudgetAdmin(project, name, op, value); err != nil {
		return err
	}
	_, err := b.budgetRun(ctx, "admin", project, name, string(op), value, by)
	return err
}

// Budgets implements governor.BudgetBackend.
func (b *Backend) Budgets(ctx context.Context, project string, names []string) ([]governor.BudgetState, time.Time, error) {
	if err := governor.ValidateProject(project); err != nil {
		return nil, time.Time{}, err
	}
	v, err := b.budgetRun(ctx, "read", project)
	if err != nil {
		return nil, time.Time{}, err
	}
	r := &reader{op: "budget read", key: governor.Key{Project: project, Resource: "{budgets}"}}
	l := r.list(v, "the reply")
	if !r.length(l, 1, true) || len(l)%2 != 1 {
		r.fail("%d fields; want the time and pairs", len(l))
		return nil, time.Time{}, r.err
	}
	now := time.UnixMilli(r.int(l[0], "the time"))
	var out []governor.BudgetState
	for i := 1; i+1 < len(l); i += 2 {
		name := r.str(l[i], "a budget's name")
		if names == nil || slices.Contains(names, name) {
			out = append(out, r.budget(name, l[i+1]))
		}
	}
	if r.err != nil {
		return nil, time.Time{}, r.err
	}
	slices.SortFunc(out, func(a, b governor.BudgetState) int { return strings.Compare(a.Name, b.Name) })
	return out, now, nil
}

// BudgetEvents implements governor.BudgetBackend.
func (b *Backend) BudgetEvents(ctx context.Context, project string) ([]governor.BudgetEvent, error) {
	if err := governor.ValidateProject(project); err != nil {
		return nil, err
	}
	if b.closed.Load() {
		return nil, governor.ErrClosed
	}
	raw, err := b.rdb.LRange(ctx, BudgetKeys(project)[3], 0, -1).Result()
	if err != nil {
		return nil, wrap("budget events", err)
	}
	out := make([]governor.BudgetEvent, 0, len(raw))
	for _, s := range raw {
		var e map[string]string
		if err := json.Unmarshal([]byte(s), &e); err != nil {
			return nil, fmt.Errorf("%w: redis: budget events of %s: malformed event %s", governor.ErrBackend, project, show(s))
		}
		at, err := strconv.ParseInt(e["at"], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: redis: budget events of %s: malformed time in %s", governor.ErrBackend, project, show(s))
		}
		out = append(out, governor.BudgetEvent{At: time.UnixMilli(at), Budget: e["budget"], Kind: e["kind"], By: e["by"], Lease: e["lease"], Detail: e["detail"]})
	}
	return out, nil
}
