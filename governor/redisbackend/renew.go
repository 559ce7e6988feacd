// Renewing a lease (renew.lua): its ARGV and its reply.

package redisbackend

import (
	"cmp"
	"context"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/leasetiming"
)

// Renew implements governor.Backend; a touch (r.Touch) is renew.lua
// marking progress.
func (b *Backend) Renew(ctx context.Context, r governor.Renewal) (time.Time, error) {
	ttl, mode := renewMode(r)
	return b.renew(ctx, r.Key, r.ID, r.Secret, r.Token, ttl, mode)
}

// renewMode is renew.lua's TTL and mode for r: a touch extends nothing.
func renewMode(r governor.Renewal) (time.Duration, string) {
	if r.Touch {
		return 0, "t"
	}
	return r.TTL, ""
}

func (b *Backend) renew(ctx context.Context, key governor.Key, id, secret string, token int64, ttl time.Duration, mode string) (time.Time, error) {
	if b.closed.Load() {
		return time.Time{}, governor.ErrClosed
	}
	rk := b.resource(key)
	v, err := renewScript.Run(ctx, b.rdb, rk.keys, b.renewArgs(rk, id, secret, token, ttl, mode)...).Slice()
	if err != nil {
		return time.Time{}, wrap("renew", err)
	}
	exp, err := renewReply(rk, key, id, v)
	if err == nil && mode == "" && b.rides(key, id) {
		b.extendSpends(ctx, []spendRenewal{{key.Project, id, secret, exp}})
	}
	return exp, err
}

// renewArgs are renew.lua's ARGV for lease id of rk with token (0:
// unknown, then the one of this backend's own grant, if it made it).
// Without a token the renewal is no evidence of lost data (loss 0); with
// one, but no TTL known on the resource (a lease renewed by handle with
// its own TTL, from a process that did not grant it), grants are held
// back for leasetiming.DefaultTTL.
func (b *Backend) renewArgs(rk *resourceKeys, id, secret string, token int64, ttl time.Duration, mode string) []any {
	loss := b.lossMS(rk, ttl)
	if t, ok := rk.held.Load(id); ok && token <= 0 {
		token = t.(int64)
	}
	switch {
	case token <= 0:
		token, loss = 0, 0
	case loss == 0 && !b.noQuarantine:
		loss = leasetiming.DefaultTTL.Milliseconds()
	}
	return []any{id, ttl.Milliseconds(), secret, mode, loss, token}
}

// renewReply reads renew.lua's reply v for lease id of key (rk its keys),
// forgetting the lease as held when it is lost.
func renewReply(rk *resourceKeys, key governor.Key, id string, v []any) (time.Time, error) {
	if len(v) == 1 && v[0] == int64(-1) {
		return time.Time{}, governor.NotOwner(key, id)
	}
	defer func() {
		if len(v) > 0 && v[0] != int64(1) {
			rk.held.Delete(id) // lost
		}
	}()
	r := &reader{op: "renew", key: key}
	if !r.length(v, 1, true) || r.int(v[0], "the code") != 1 {
		if r.err != nil || len(v) == 1 {
			return time.Time{}, cmp.Or(r.err, governor.ErrLeaseLost)
		}
		// The event that ended the lease.
		if !r.length(v, 5, false) {
			return time.Time{}, r.err
		}
		e := governor.Event{Kind: r.str(v[1], "the kind of its end"), LeaseID: id, Token: r.int(v[2], "the token of its end"),
			Detail: r.str(v[3], "the detail of its end"), At: time.UnixMilli(r.int(v[4], "the time of its end"))}
		return time.Time{}, cmp.Or(r.err, error(&governor.LeaseLostError{Resource: key.Resource, LeaseID: id, End: e}))
	}
	if !r.length(v, 2, false) {
		return time.Time{}, r.err
	}
	exp := r.int(v[1], "the expiry")
	return time.UnixMilli(exp), r.err
}
