package redisbackend

import (
	"context"

	"github.com/governor-dev/governor/governor"
	scripts "github.com/governor-dev/governor/scripts-lua"
)

var watchdogScript = newScript(scripts.Watchdog)

// recordWatchdogKill implements governor.Backend's Record of eventkind.WatchdogKill.
func (b *Backend) recordWatchdogKill(ctx context.Context, key governor.Key, id string, token int64, detail string) error {
	if b.closed.Load() {
		return governor.ErrClosed
	}
	return wrap("note watchdog kill", watchdogScript.Run(ctx, b.rdb, b.resource(key).keys, id, token, detail).Err())
}
