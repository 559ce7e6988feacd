package redisbackend

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/governor-dev/governor/governor"
	scripts "github.com/governor-dev/governor/scripts-lua"
)

var rateScript = redis.NewScript(scripts.Rate)

var _ governor.RateBackend = (*Backend)(nil)

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
		return governor.RateResult{}, governor.ErrClosed
	}
	args := append([]any{"reserve"}, rateArgs(req.Requests, req.NRequests)...)
	args = append(args, rateArgs(req.Tokens, req.NTokens)...)
	v, err := rateScript.Run(ctx, b.rdb, RateKeys(req.Key), args...).Slice()
	if err != nil {
		return governor.RateResult{}, wrap("rate reserve", err)
	}
	r := &reader{op: "rate reserve", key: req.Key}
	if !r.length(v, 4, false) {
		return governor.RateResult{}, r.err
	}
	res := governor.RateResult{Allowed: r.int(v[0], "the verdict") == 1, RemainingRequests: r.int(v[2], "the requests left"),
		RemainingTokens: r.int(v[3], "the tokens left")}
	retry := r.int(v[1], "the retry time")
	if r.err != nil {
		return governor.RateResult{}, r.err
	}
	if retry < 0 {
		return governor.RateResult{}, fmt.Errorf("%w: %d requests / %d tokens for %s exceed the burst of its rate limits",
			governor.ErrTooHeavy, req.NRequests, req.NTokens, req.Key.Resource)
	}
	res.RetryAfter = usec(retry)
	return res, nil
}

// RateAdjust implements governor.RateBackend.
func (b *Backend) RateAdjust(ctx context.Context, key governor.Key, tokens governor.RateLimit, delta int64) error {
	if b.closed.Load() {
		return governor.ErrClosed
	}
	args := append([]any{"adjust"}, rateArgs(governor.RateLimit{}, 0)...)
	args = append(args, rateArgs(tokens, delta)...)
	return wrap("rate adjust", rateScript.Run(ctx, b.rdb, RateKeys(key), args...).Err())
}

// RateLimited returns how many reservations of key were denied.
func (b *Backend) RateLimited(ctx context.Context, key governor.Key) (int64, error) {
	s, err := b.rdb.HGet(ctx, RateKeys(key)[1], "limited").Result()
	if err == redis.Nil {
		return 0, nil
	}
	if err != nil {
		return 0, wrap("rate counters", err)
	}
	return strconv.ParseInt(s, 10, 64)
}

func usec(n int64) time.Duration { return time.Duration(n) * time.Microsecond }
