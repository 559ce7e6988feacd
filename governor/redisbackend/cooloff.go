package redisbackend

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/governor-dev/governor/governor"
	scripts "github.com/governor-dev/governor/scripts-lua"
)

var coolOffScript = redis.NewScript(scripts.CoolOff)

var _ governor.CoolOffBackend = (*Backend)(nil)

// CoolOff implements governor.CoolOffBackend.
func (b *Backend) CoolOff(ctx context.Context, key governor.Key, d time.Duration, reason string) (time.Time, error) {
	if b.closed.Load() {
		return time.Time{}, governor.ErrClosed
	}
	v, err := coolOffScript.Run(ctx, b.rdb, b.resource(key).keys, max(d.Milliseconds(), 1), reason).Int64()
	if err != nil {
		return time.Time{}, wrap("cool-off", err)
	}
	return time.UnixMilli(v), nil
}
