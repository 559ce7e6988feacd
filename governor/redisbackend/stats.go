package redisbackend

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/histogram"
	scripts "github.com/governor-dev/governor/scripts-lua"
)

var (
	observeScript = newScript(func() string { return scripts.Observe })
	forgetScript  = newScript(scripts.Forget)
)

// StatsKey is the hash of a resource's backend-kept histograms; it shares
// the resource's hash tag.
func StatsKey(key governor.Key) string {
	return Prefix + "{" + key.Project + "/" + key.Resource + "}:stats"
}

// Observe implements governor.Backend.
func (b *Backend) Observe(ctx context.Context, key governor.Key, name string, counts []int64, sum time.Duration) error {
	args := make([]any, 0, 2+len(counts))
	args = append(args, name, strconv.FormatInt(sum.Microseconds(), 10))
	for _, n := range counts {
		args = append(args, strconv.FormatInt(n, 10))
	}
	r := b.resource(key)
	return wrap("observe", observeScript.Run(ctx, b.rdb, []string{r.withStats[len(r.withStats)-1], r.keys[1]}, args...).Err())
}

// stats reads the stats hash (field, value pairs) into histograms.
func (r *reader) stats(v []any) map[string]histogram.Histogram {
	var out map[string]histogram.Histogram
	for i := 0; i+1 < len(v) && r.err == nil; i += 2 {
		name, field, ok := strings.Cut(r.str(v[i], "a stats field's name"), ":")
		if !ok {
			continue
		}
		n := r.int(v[i+1], "stats field "+name+":"+field)
		if out == nil {
			out = map[string]histogram.Histogram{}
		}
		h := out[name]
		if h.Counts == nil {
			h.Counts = make([]int64, len(histogram.Bounds(name))+1)
		}
		if field == "sum" {
			h.Sum = time.Duration(n) * time.Microsecond
		} else if j, err := strconv.Atoi(field); err == nil && j >= 0 && j < len(h.Counts) {
			h.Counts[j] = n
		}
		out[name] = h
	}
	return out
}

// Forget implements governor.Backend. The resource's keys are deleted by
// one script; its entry in the project index (another hash tag) after.
// An acquire that recreates the resource meanwhile lists it again
// (acquire.lua reports it fresh), and so does the check after the
// removal, for one that listed it between the script and the removal.
func (b *Backend) Forget(ctx context.Context, key governor.Key, retention time.Duration) (bool, error) {
	r := b.resource(key)
	n, err := forgetScript.Run(ctx, b.rdb, r.forStatus, retention.Milliseconds()).Int()
	if err != nil {
		return false, wrap("forget", err)
	}
	if n != 1 {
		return false, nil
	}
	r.registered.Store(false)
	if err := b.rdb.SRem(ctx, indexKey(key.Project), key.Resource).Err(); err != nil {
		return true, wrap("forget: index", err)
	}
	// Born again since (forget.lua leaves a tombstone, without a limit)?
	err = b.rdb.HGet(ctx, r.keys[1], "limit").Err()
	if err != nil && !errors.Is(err, redis.Nil) {
		return true, wrap("forget: index", err)
	}
	if err == nil {
		if err := b.rdb.SAdd(ctx, indexKey(key.Project), key.Resource).Err(); err != nil {
			return true, wrap("forget: index", err)
		}
	}
	return true, nil
}
