package redisbackend

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/governor-dev/governor/governor"
)

// How a waiter learns of its grant: a release of another process
// PUBLISHes on the waiter's backend's channel (dispatch); one of its own
// backend tells it in the release's reply (hand).

func (b *Backend) dispatch(ch <-chan *redis.Message) {
	defer close(b.done)
	for m := range ch {
		b.mu.Lock()
		w := b.waiters[m.Payload]
		b.mu.Unlock()
		w.wake()
	}
}

// A waiter is one Notify watches: its channel, and the resource it
// waits on.
type waiter struct {
	ch  chan struct{}
	key governor.Key
}

// wake tells w to look again (a zero waiter: nothing).
func (w waiter) wake() {
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

// Notify implements governor.Backend.
func (b *Backend) Notify(_ context.Context, key governor.Key, id string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	b.mu.Lock()
	b.waiters[id] = waiter{ch, key}
	b.mu.Unlock()
	return ch, func() {
		b.mu.Lock()
		delete(b.waiters, id)
		delete(b.handed, id)
		b.mu.Unlock()
	}
}

// hand keeps the grants release.lua's reply lists (id, token, expiry ms,
// limit, for each of this backend's waiters it granted: those on its
// channel are told so, not on the channel) for those Notify still
// watches, and wakes each: its Acquire then returns the grant with no
// round trip (Result.Sent: sent, taken before the release was).
func (b *Backend) hand(key governor.Key, v []any, sent time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := 0; i+3 < len(v); i += 4 {
		id, _ := v[i].(string)
		w, ok := b.waiters[id]
		tok, ok1 := v[i+1].(int64)
		exp, ok2 := v[i+2].(int64)
		limit, ok3 := v[i+3].(int64)
		if !ok {
			continue
		}
		if ok1 && ok2 && ok3 && w.key == key {
			b.handed[id] = governor.Result{Outcome: governor.Granted, Token: tok, Expires: time.UnixMilli(exp),
				Limit: int(limit), Sent: sent}
		}
		w.wake() // a grant it cannot take here, it claims with an acquire
	}
}

// wakeAll wakes this backend's waiters on key: a release whose reply was
// lost may have granted some of them, told only in that reply.
func (b *Backend) wakeAll(key governor.Key) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, w := range b.waiters {
		if w.key == key {
			w.wake()
		}
	}
}

// taken returns and forgets the grant handed to req (hand), if any: one
// for the resource its waiter, Notify's, waits on.
func (b *Backend) taken(req governor.Request) (governor.Result, bool) {
	if req.New {
		return governor.Result{}, false
	}
	b.mu.Lock()
	res, ok := b.handed[req.ID]
	if ok {
		delete(b.handed, req.ID)
		ok = b.waiters[req.ID].key == req.Key
	}
	b.mu.Unlock()
	return res, ok
}
