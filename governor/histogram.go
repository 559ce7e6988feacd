package governor

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/governor-dev/governor/governor/histogram"
)

// observeFlush is how long a Governor gathers observations before
// it sends them to the backend in one call per resource (its first
// observation is sent at once); Close sends what is left.
const observeFlush = time.Second

// recorder gathers observations and sends them to the backend in the
// background, so that measuring a grant adds no round trip to it: the
// first observation at once, later ones at most once per
// observeFlush. Close flushes synchronously; a process that dies
// loses at most one interval's observations.
type recorder struct {
	b     Backend
	every time.Duration // observeFlush

	mu      sync.Mutex
	pending map[recKey]*histogram.Histogram
	timer   *time.Timer
	closed  bool
	started bool // a flush has been scheduled before

	flushMu sync.Mutex // one flush at a time
}

type recKey struct {
	key  Key
	name string
}

func newRecorder(b Backend) *recorder {
	return &recorder{b: b, every: observeFlush, pending: map[recKey]*histogram.Histogram{}}
}

// observe adds d to histogram name of key.
func (r *recorder) observe(key Key, name string, d time.Duration) {
	bounds := histogram.Bounds(name)
	i, _ := slices.BinarySearch(bounds, d) // first bound >= d; le semantics
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	k := recKey{key, name}
	h := r.pending[k]
	if h == nil {
		h = &histogram.Histogram{Counts: make([]int64, len(bounds)+1)}
		r.pending[k] = h
	}
	h.Counts[i]++
	h.Sum += d
	if r.timer == nil {
		// The first goes at once, while the caller works with its grant: a
		// short-lived process (governor run) would otherwise send it in
		// Close, one more backend write after its release, before it exits.
		wait := r.every
		if !r.started {
			wait, r.started = 0, true
		}
		r.timer = time.AfterFunc(wait, func() {
			r.mu.Lock()
			r.timer = nil
			r.mu.Unlock()
			r.flush()
		})
	}
}

// flush sends what is pending. What the backend does not take is kept
// for the next flush (and dropped once closed). It takes the batch and
// sends it under flushMu, so that close, which waits for flushMu, never
// returns between the two: a batch taken is sent before close returns,
// or not at all.
func (r *recorder) flush() {
	r.flushMu.Lock()
	defer r.flushMu.Unlock()
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	batch := r.pending
	r.pending = map[recKey]*histogram.Histogram{}
	r.mu.Unlock()
	r.send(batch)
}

// send sends batch; the caller holds flushMu (one flush at a time).
func (r *recorder) send(batch map[recKey]*histogram.Histogram) {
	for k, h := range batch {
		ctx, cancel := context.WithTimeout(context.Background(), DefaultReleaseTimeout)
		err := r.b.Observe(ctx, k.key, k.name, h.Counts, h.Sum)
		cancel()
		if err != nil {
			r.keep(k, h)
		}
	}
}

// keep puts back a batch the backend did not take, unless closed.
func (r *recorder) keep(k recKey, h *histogram.Histogram) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	if p := r.pending[k]; p != nil {
		for i := range p.Counts {
			p.Counts[i] += h.Counts[i]
		}
		p.Sum += h.Sum
		return
	}
	r.pending[k] = h
}

// close stops recording and sends what is pending, after any flush in
// progress: nothing is sent after close returns.
func (r *recorder) close() {
	r.flushMu.Lock()
	defer r.flushMu.Unlock()
	r.mu.Lock()
	r.closed = true
	if r.timer != nil {
		r.timer.Stop()
		r.timer = nil
	}
	batch := r.pending
	r.pending = nil
	r.mu.Unlock()
	r.send(batch)
}
