package redisbackend

import (
	"context"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/internal/ops"
)

// Admin implements governor.Backend: each kind of action by its own
// function.
func (b *Backend) Admin(ctx context.Context, key governor.Key, a governor.Action) (governor.ActionResult, error) {
	return ops.Admin{Pause: b.adminPause, Limit: b.adminLimit, ClearLimit: b.adminClearLimit, CoolOff: b.adminCoolOff,
		Withdraw: b.adminWithdraw, Reclaim: b.adminReclaim}.Do(ctx, key, a)
}

// Record implements governor.Backend: each kind of event by its own
// function.
func (b *Backend) Record(ctx context.Context, key governor.Key, e governor.Event) error {
	return ops.Record{Lost: b.recordLost, Degraded: b.recordDegraded, WatchdogKill: b.recordWatchdogKill}.Do(ctx, key, e)
}
