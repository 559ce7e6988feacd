package filebackend

import (
	"context"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/eventkind"
)

// recordWatchdogKill implements governor.Backend's Record of eventkind.WatchdogKill.
func (b *Backend) recordWatchdogKill(ctx context.Context, key governor.Key, id string, token int64, detail string) error {
	return b.do(ctx, key, section{create: true}, func(t *tx) error {
		t.event(eventkind.WatchdogKill, id, token, detail)
		return t.commit()
	})
}
