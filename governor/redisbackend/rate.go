package redisbackend

import (
	"context"
	"fmt"
	"slices"
	"strings"
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
	args := append([]any{"reserve"}, rateArgs(req.Requests, req.NRequests)...)
	args = append(args, rateArgs(req.Tokens, req.NTokens)...)
	v, err := rateScript.Run(ctx, b.rdb, RateKeys(req.Key), args...).Slice()
	if err != nil {
		return governor.RateResult{}, wrap("rate reserve", err)
	}
	b.registerRate(ctx, req.Key)
	if len(v) != 4 {
		return governor.RateResult{}, fmt.Errorf("governor: redis: short rate reply")
	}
	retry := atoi(toString(v[1]))
	if retry < 0 {
		return governor.RateResult{}, fmt.Errorf("%w: %d requests / %d tokens for %s exceed the burst of its rate limits",
			governor.ErrTooHeavy, req.NRequests, req.NTokens, req.Key.Resource)
	}
	return governor.RateResult{Allowed: toInt(v[0]) == 1, RetryAfter: usec(retry),
		RemainingRequests: atoi(toString(v[2])), RemainingTokens: atoi(toString(v[3]))}, nil
}

// RateAdjust implements governor.RateBackend.
func (b *Backend) RateAdjust(ctx context.Context, key governor.Key, tokens governor.RateLimit, delta int64) error {
	args := append([]any{"adjust"}, rateArgs(governor.RateLimit{}, 0)...)
	args = append(args, rateArgs(tokens, delta)...)
	return wrap("rate adjust", rateScript.Run(ctx, b.rdb, RateKeys(key), args...).Err())
}

// RateStatus implements governor.RateBackend.
func (b *Backend) RateStatus(ctx context.Context, key governor.Key) (governor.RateStatus, error) {
	args := append([]any{"status"}, rateArgs(governor.RateLimit{}, 0)...)
	args = append(args, rateArgs(governor.RateLimit{}, 0)...)
	v, err := rateScript.Run(ctx, b.rdb, RateKeys(key), args...).Slice()
	if err != nil {
		return governor.RateStatus{}, wrap("rate status", err)
	}
	if len(v) != 6 {
		return governor.RateStatus{}, fmt.Errorf("%w: redis: rate status reply of %d fields, want 6", governor.ErrBackend, len(v))
	}
	rs := governor.RateStatus{Key: key, Allowed: toInt(v[0]), Limited: toInt(v[1]),
		RemainingRequests: toInt(v[3]), RemainingTokens: toInt(v[4]), Now: time.UnixMicro(toInt(v[5]))}
	if f := strings.Fields(toString(v[2])); len(f) == 6 {
		rs.Requests = governor.RateLimit{Rate: atoi(f[0]), Period: usec(atoi(f[1])), Burst: atoi(f[2])}
		rs.Tokens = governor.RateLimit{Rate: atoi(f[3]), Period: usec(atoi(f[4])), Burst: atoi(f[5])}
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
