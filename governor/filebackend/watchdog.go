package filebackend

import (
	"context"

	"github.com/governor-dev/governor/governor"
)

// recordWatchdogKill implements governor.Backend's Record of EventWatchdogKill.
func (b *Backend) recordWatchdogKill(ctx context.Context, key governor.Key, id string, token int64, detail string) error {
	return b.do(ctx, key, section{create: true}, func(t *tx) error {
		t.event(governor.EventWatchdogKill, id, token, detail)
		return t.commit()
	})
}
