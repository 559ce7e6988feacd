package metrics

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/eventkind"
)

// EventSource is a Source that reads the events the backend keeps
// (*governor.Governor on either backend). With it, a Collector counts
// drift events: the backend keeps no counter of acquires that asked for
// another limit or queue policy than the one in force, but records an
// eventkind.Drift for each new disagreement.
type EventSource interface {
	Events(ctx context.Context, resource string, since time.Time) ([]governor.Event, error)
}

var _ EventSource = (*governor.Governor)(nil)

// driftCount counts each resource's drift events from the events the
// backend keeps: all of them at the first read, then those newer than
// the last one seen. Its counts only increase, also when the backend
// trims or forgets events, as a Prometheus counter must.
type driftCount struct {
	mu    sync.Mutex
	last  map[string]time.Time // the newest event seen, by resource
	count map[string]int
}

// read counts the new drift events of resources, and returns every
// count (those it could not read keep their last value).
func (d *driftCount) read(ctx context.Context, src EventSource, resources []string, s *snapshot) map[string]int {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.count == nil {
		d.last, d.count = map[string]time.Time{}, map[string]int{}
	}
	for _, n := range resources {
		last := d.last[n]
		evs, err := src.Events(ctx, n, last)
		if err != nil {
			if s.failed(ctx, fmt.Errorf("metrics: events of %s: %w", n, err)) {
				break
			}
			continue
		}
		if _, ok := d.count[n]; !ok {
			d.count[n] = 0 // read: its series is sent, 0 when it never drifted
		}
		for _, e := range evs {
			if !e.At.After(last) {
				continue // seen at the last read
			}
			if e.Kind == eventkind.Drift {
				d.count[n]++
			}
			d.last[n] = maxTime(d.last[n], e.At)
		}
	}
	out := make(map[string]int, len(d.count))
	for n, c := range d.count {
		out[n] = c
	}
	return out
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
