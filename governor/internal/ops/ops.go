// Package ops routes the calls of the backend contract that name what
// they do by an event kind (governor.Backend's Admin and Record) to the
// backend's own function for each kind: one room for the routing and its
// refusals, shared by both backends.
package ops

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/eventkind"
)

// Admin is a backend's function for each kind of governor.Action.
type Admin struct {
	Pause      func(ctx context.Context, key governor.Key, paused bool, by string) (bool, error)
	Limit      func(ctx context.Context, key governor.Key, limit int, by string) error
	ClearLimit func(ctx context.Context, key governor.Key, back int, by string) error
	CoolOff    func(ctx context.Context, key governor.Key, d time.Duration, reason string) (time.Time, error)
	Withdraw   func(ctx context.Context, key governor.Key, ids []string, why governor.Action) ([]string, error)
	Reclaim    func(ctx context.Context, key governor.Key, id string, token int64) (bool, error)
}

// Do runs a on key through f.
func (f Admin) Do(ctx context.Context, key governor.Key, a governor.Action) (governor.ActionResult, error) {
	var res governor.ActionResult
	var err error
	switch {
	case a.Kind == eventkind.Paused || a.Kind == eventkind.Resumed:
		res.Changed, err = f.Pause(ctx, key, a.Kind == eventkind.Paused, a.By)
	case a.Kind == eventkind.Limit && a.Limit == 0 && a.Back != 0:
		err = f.ClearLimit(ctx, key, a.Back, a.By)
	case a.Kind == eventkind.Limit:
		err = f.Limit(ctx, key, a.Limit, a.By)
	case a.Kind == eventkind.CoolOff:
		res.Until, err = f.CoolOff(ctx, key, a.For, a.Detail)
	case slices.Contains(eventkind.Withdraw, a.Kind):
		res.IDs, err = f.Withdraw(ctx, key, a.IDs, a)
	case a.Kind == eventkind.Reclaimed && len(a.IDs) == 1:
		res.Changed, err = f.Reclaim(ctx, key, a.IDs[0], a.Token)
	default:
		err = fmt.Errorf("%w: an action of kind %q on %s with %d ids; allowed: %s, %s, %s, %s, %s with one id, or a withdraw kind %v",
			governor.ErrInvalid, a.Kind, key, len(a.IDs), eventkind.Paused, eventkind.Resumed, eventkind.Limit,
			eventkind.CoolOff, eventkind.Reclaimed, eventkind.Withdraw)
	}
	return res, err
}

// Record is a backend's function for each kind of event a process
// records (governor.Backend's Record).
type Record struct {
	Lost         func(ctx context.Context, key governor.Key, id string, token int64, reason string) error
	Degraded     func(ctx context.Context, key governor.Key, detail string) error
	WatchdogKill func(ctx context.Context, key governor.Key, id string, token int64, detail string) error
}

// Do records e on key through f.
func (f Record) Do(ctx context.Context, key governor.Key, e governor.Event) error {
	switch e.Kind {
	case eventkind.Lost:
		return f.Lost(ctx, key, e.LeaseID, e.Token, e.Detail)
	case eventkind.Degraded:
		return f.Degraded(ctx, key, e.Detail)
	case eventkind.WatchdogKill:
		return f.WatchdogKill(ctx, key, e.LeaseID, e.Token, e.Detail)
	}
	return fmt.Errorf("%w: an event of kind %q recorded on %s; allowed: %s, %s, %s", governor.ErrInvalid, e.Kind, key,
		eventkind.Lost, eventkind.Degraded, eventkind.WatchdogKill)
}
