package redisbackend

import (
	"context"
	"time"

	"github.com/governor-dev/governor/governor"
	scripts "github.com/governor-dev/governor/scripts-lua"
)

var coolOffScript = newScript(scripts.CoolOff)

// adminCoolOff implements governor.Backend's Admin of eventkind.CoolOff.
func (b *Backend) adminCoolOff(ctx context.Context, key governor.Key, d time.Duration, reason string) (time.Time, error) {
	if b.closed.Load() {
		return time.Time{}, governor.ErrClosed
	}
	r := b.resource(key)
	v, err := coolOffScript.Run(ctx, b.rdb, r.keys, max(d.Milliseconds(), 1), reason).Int64()
	if err != nil {
		return time.Time{}, wrap("cool-off", err)
	}
	b.register(ctx, key, r, false) // listed, as the file backend lists it: slots and metrics show it
	return time.UnixMilli(v), nil
}

var adaptScript = newScript(scripts.Adapt)

// Adapt implements governor.Backend.
func (b *Backend) Adapt(ctx context.Context, key governor.Key, req governor.AdaptRequest) (governor.AdaptiveState, error) {
	if b.closed.Load() {
		return governor.AdaptiveState{}, governor.ErrClosed
	}
	op := "success"
	if req.Signal {
		op = "signal"
	}
	rk := b.resource(key)
	v, err := adaptScript.Run(ctx, b.rdb, rk.keys, op, req.Max, req.Min, req.IncreaseEvery).Slice()
	if err != nil {
		return governor.AdaptiveState{}, wrap("adapt", err)
	}
	b.register(ctx, key, rk, false)
	r := &reader{op: "adapt", key: key}
	if !r.length(v, 3, false) {
		return governor.AdaptiveState{}, r.err
	}
	st := governor.AdaptiveState{Limit: int(r.int(v[0], "the adaptive limit")), Max: int(r.int(v[1], "the maximum")),
		Successes: int(r.int(v[2], "the successes"))}
	return st, r.err
}

var noteScript = newScript(scripts.Note)

// recordDegraded implements governor.Backend's Record of eventkind.Degraded.
func (b *Backend) recordDegraded(ctx context.Context, key governor.Key, detail string) error {
	if b.closed.Load() {
		return governor.ErrClosed
	}
	return wrap("note degraded", noteScript.Run(ctx, b.rdb, b.resource(key).keys, detail).Err())
}
