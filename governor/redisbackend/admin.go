package redisbackend

import (
	"context"
	"strconv"

	"github.com/governor-dev/governor/governor"
	scripts "github.com/governor-dev/governor/scripts-lua"
)

var adminScript = newScript(scripts.Admin)

// adminWithdraw implements governor.Backend's Admin of a withdraw kind: admin.lua's withdraw.
func (b *Backend) adminWithdraw(ctx context.Context, key governor.Key, ids []string, why governor.Action) ([]string, error) {
	if b.closed.Load() {
		return nil, governor.ErrClosed
	}
	if len(ids) == 0 {
		return nil, nil
	}
	args := make([]any, 0, 4+len(ids))
	args = append(args, "withdraw", why.By, why.Kind, why.Detail)
	for _, id := range ids {
		args = append(args, id)
	}
	rk := b.resource(key)
	v, err := adminScript.Run(ctx, b.rdb, rk.keys, args...).Slice()
	if err != nil {
		return nil, wrap("withdraw", err)
	}
	r := &reader{op: "withdraw", key: key}
	out := make([]string, 0, len(v))
	for _, x := range v {
		out = append(out, r.str(x, "a withdrawn waiter's id"))
	}
	return out, r.err
}

// adminPause implements governor.Backend's Admin of eventkind.Paused and eventkind.Resumed: admin.lua's pause and resume.
func (b *Backend) adminPause(ctx context.Context, key governor.Key, paused bool, by string) (bool, error) {
	if b.closed.Load() {
		return false, governor.ErrClosed
	}
	op := "resume"
	if paused {
		op = "pause"
	}
	rk := b.resource(key)
	n, err := adminScript.Run(ctx, b.rdb, rk.keys, op, by).Int()
	if err != nil {
		return false, wrap(op, err)
	}
	if n == 1 && paused {
		b.register(ctx, key, rk, true) // the state it made is listed
	}
	return n == 1, nil
}

// adminLimit implements governor.Backend's Admin of eventkind.Limit, set: admin.lua's limit.
func (b *Backend) adminLimit(ctx context.Context, key governor.Key, limit int, by string) error {
	return b.setLimit(ctx, key, limit, 0, by)
}

// adminClearLimit implements governor.Backend's Admin of eventkind.Limit, cleared: admin.lua's limit with the
// limit to go back to.
func (b *Backend) adminClearLimit(ctx context.Context, key governor.Key, back int, by string) error {
	return b.setLimit(ctx, key, 0, back, by)
}

func (b *Backend) setLimit(ctx context.Context, key governor.Key, limit, back int, by string) error {
	if b.closed.Load() {
		return governor.ErrClosed
	}
	rk := b.resource(key)
	if err := adminScript.Run(ctx, b.rdb, rk.keys, "limit", by, strconv.Itoa(limit), strconv.Itoa(back)).Err(); err != nil {
		return wrap("limit", err)
	}
	if limit > 0 {
		b.register(ctx, key, rk, true) // the state it made is listed
	}
	return nil
}
