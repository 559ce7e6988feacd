package redisbackend

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/internal/backendkit"
	scripts "github.com/governor-dev/governor/scripts-lua"
)

var rateScript = newScript(scripts.Rate)

// RateKeys are the keys of a rate limit's state and counters; they share
// the hash tag of the resource of the same name.
func RateKeys(key governor.Key) []string {
	base := Prefix + "{" + key.Project + "/" + key.Resource + "}:"
	return []string{base + "rate", base + "ratec"}
}

func rateArgs(l governor.RateLimit, cost int64) []any {
	return []any{l.Rate, l.Period.Microseconds(), l.Burst, cost}
}

// RateReserve implements governor.RateBackend.
func (b *Backend) RateReserve(ctx context.Context, req governor.RateRequest) (governor.RateResult, error) {
	if b.closed.Load() {
		res := governor.RateResult{}
		if req.Budget != nil {
			res.BudgetErr = governor.ErrClosed
		}
		return res, governor.ErrClosed
	}
	if req.Share != nil {
		return b.rateShare(ctx, req)
	}
	keys, args := b.rateReserveCall(req)
	if req.Budget == nil {
		v, err := rateScript.Run(ctx, b.rdb, keys, args...).Result()
		return b.rateReserved(ctx, req, v, err)
	}
	// A budget reservation sent with it: one pipeline (batcher.send),
	// each script call keeping its own reply.
	budget := *req.Budget
	if err := governor.ValidateBudgetRequest(budget); err != nil {
		v, rerr := rateScript.Run(ctx, b.rdb, keys, args...).Result()
		res, rerr := b.rateReserved(ctx, req, v, rerr)
		res.BudgetErr = err
		return res, rerr
	}
	bk := BudgetKeys(budget.Project)
	rc := &call{ctx: ctx, s: rateScript, keys: &resourceKeys{keys: keys, boxed: box(keys)}, args: args, done: make(chan struct{})}
	bc := &call{ctx: ctx, s: budgetScript, keys: &resourceKeys{keys: bk, boxed: box(bk)},
		args: append([]any{"reserve", backendkit.MaxBudgetEvents}, b.budgetReserveArgs(budget)...), done: make(chan struct{})}
	b.batch.send([]*call{rc, bc})
	v, err := bc.cmd.Result()
	bres, berr := b.budgetReserved(budget, v, wrap("budget reserve", err))
	v, err = rc.cmd.Result()
	res, err := b.rateReserved(ctx, req, v, err)
	res.Budget, res.BudgetErr = bres, berr
	return res, err
}

// rateReserveCall is rate.lua's keys and arguments for a reservation of
// req.
func (b *Backend) rateReserveCall(req governor.RateRequest) ([]string, []any) {
	args := append([]any{"reserve"}, rateArgs(req.Requests, req.NRequests)...)
	args = append(args, rateArgs(req.Tokens, req.NTokens)...)
	if req.Shadow {
		args = append(args, "1")
	}
	// The third key carries the cool-off (see cooloff.lua), the fourth
	// and fifth the shares of the requests and of the tokens
	// (rateshare.go).
	return b.rateCallKeys(req.Key), args
}

// rateReserved reads rate.lua reserve's reply v (err: the call's error).
func (b *Backend) rateReserved(ctx context.Context, req governor.RateRequest, reply any, err error) (governor.RateResult, error) {
	if err != nil {
		return governor.RateResult{}, wrap("rate reserve", err)
	}
	b.registerRate(ctx, req.Key)
	r := &reader{op: "rate reserve", key: req.Key}
	v := r.list(reply, "the reply")
	if r.err != nil {
		return governor.RateResult{}, r.err
	}
	if len(v) != 5 && len(v) != 6 && !r.length(v, 4, false) { // 5: denied by a cool-off; 6: shadow denied
		return governor.RateResult{}, r.err
	}
	var coolOff time.Time
	if len(v) == 5 {
		coolOff = time.UnixMilli(r.int(v[4], "the end of the cool-off"))
	}
	shadowDenied := len(v) == 6 && r.int(v[5], "the shadow verdict") == 1
	res := governor.RateResult{Allowed: r.int(v[0], "the verdict") == 1, RemainingRequests: r.int(v[2], "the requests left"),
		RemainingTokens: r.int(v[3], "the tokens left")}
	retry := r.int(v[1], "the retry time")
	if r.err != nil {
		return governor.RateResult{}, r.err
	}
	if retry < 0 && !shadowDenied {
		return governor.RateResult{}, fmt.Errorf("%w: %d requests / %d tokens for %s exceed the burst of its rate limits",
			governor.ErrTooHeavy, req.NRequests, req.NTokens, req.Key.Resource)
	}
	res.RetryAfter, res.CoolOff, res.ShadowDenied = usec(max(retry, 0)), coolOff, shadowDenied
	return res, nil
}

// RateAdjust implements governor.RateBackend.
func (b *Backend) RateAdjust(ctx context.Context, a governor.RateAdjustment) error {
	if b.closed.Load() {
		return governor.ErrClosed
	}
	if a.Learned != nil {
		if err := b.rateLearn(ctx, a.Key, *a.Learned); err != nil || a.Delta == 0 {
			return err
		}
	}
	return wrap("rate adjust", rateScript.Run(ctx, b.rdb, b.rateCallKeys(a.Key), rateAdjustArgs(a.Tokens, a.Delta)...).Err())
}

// rateAdjustArgs are rate.lua's arguments for an adjustment of tokens by
// delta.
func rateAdjustArgs(tokens governor.RateLimit, delta int64) []any {
	args := append([]any{"adjust"}, rateArgs(governor.RateLimit{}, 0)...)
	return append(args, rateArgs(tokens, delta)...)
}

// RateStatus implements governor.RateBackend.
func (b *Backend) RateStatus(ctx context.Context, key governor.Key) (governor.RateStatus, error) {
	args := append([]any{"status"}, rateArgs(governor.RateLimit{}, 0)...)
	args = append(args, rateArgs(governor.RateLimit{}, 0)...)
	v, err := rateScript.Run(ctx, b.rdb, b.rateCallKeys(key), args...).Slice()
	if err != nil {
		return governor.RateStatus{}, wrap("rate status", err)
	}
	r := &reader{op: "rate status", key: key}
	if !r.length(v, 12, false) {
		return governor.RateStatus{}, r.err
	}
	rs := governor.RateStatus{Key: key, Allowed: r.int(v[0], "the allowed count"), Limited: r.int(v[1], "the limited count"),
		ShadowDenied:      r.int(v[6], "the shadow denied count"),
		RemainingRequests: r.int(v[3], "the requests left"), RemainingTokens: r.int(v[4], "the tokens left"),
		Now: time.UnixMicro(r.int(v[5], "the time"))}
	rateStatusShares(r, v[7:], &rs)
	limits := r.str(v[2], "the limits")
	if r.err != nil {
		return governor.RateStatus{}, r.err
	}
	if f := strings.Fields(limits); len(f) == 6 {
		n := make([]int64, 6)
		for i, s := range f {
			n[i] = r.int(s, "a rate limit field")
		}
		if r.err != nil {
			return governor.RateStatus{}, r.err
		}
		rs.Requests = governor.RateLimit{Rate: n[0], Period: usec(n[1]), Burst: n[2]}
		rs.Tokens = governor.RateLimit{Rate: n[3], Period: usec(n[4]), Burst: n[5]}
	}
	return rs, nil
}

func ratesKey(project string) string { return Prefix + "{" + project + "}:rates" }

// registerRate lists key in its project's index of rate keys, once per
// backend.
func (b *Backend) registerRate(ctx context.Context, key governor.Key) {
	if _, ok := b.rates.Load(key); ok {
		return
	}
	if err := b.rdb.SAdd(ctx, ratesKey(key.Project), key.Resource).Err(); err == nil {
		b.rates.Store(key, true)
	}
}

// Rates implements governor.RateBackend.
func (b *Backend) Rates(ctx context.Context, project string) ([]string, error) {
	names, err := b.rdb.SMembers(ctx, ratesKey(project)).Result()
	if err != nil {
		return nil, wrap("rates", err)
	}
	slices.Sort(names)
	return names, nil
}

func usec(n int64) time.Duration { return time.Duration(n) * time.Microsecond }

// rateLearn implements RateAdjust's learned budget (RateAdjustment.Learned).
func (b *Backend) rateLearn(ctx context.Context, key governor.Key, lb governor.LearnedBudget) error {
	if b.closed.Load() {
		return governor.ErrClosed
	}
	args := []any{"learn", lb.RemainingRequests, lb.ResetRequests.Microseconds(), 0, 0,
		lb.RemainingTokens, lb.ResetTokens.Microseconds(), 0, 0}
	return wrap("rate learn", rateScript.Run(ctx, b.rdb, RateKeys(key), args...).Err())
}
