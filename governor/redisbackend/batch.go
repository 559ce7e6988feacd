package redisbackend

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// batchInFlight is how many round trips of acquires and releases a
// backend keeps in flight before it batches (issue 27): below it a call
// goes out alone, at once; beyond it calls wait and go out together, in
// one pipeline, as soon as a round trip ends.
const batchInFlight = 2

// batcher sends the acquires and releases that goroutines of one process
// issue at the same instant in one pipeline (go-redis splits a pipeline by
// node on a Cluster, each script's keys being in one hash slot), each
// call keeping its own reply and error. Each script is atomic on the
// server and runs between its call and its return, so batching changes no
// outcome a caller can see: calls that overlap in time had no order to
// keep. No goroutine is started: the call at the head of a batch sends
// it, handed the round trip slot by the call that ends before it.
type batcher struct {
	rdb     redis.UniversalClient
	mu      sync.Mutex
	busy    int     // round trips in flight
	waiting []*call // calls for the next batch, oldest first
}

// call is one script call waiting for a batch.
type call struct {
	ctx  context.Context
	s    *script
	keys []string
	args []any
	cmd  *redis.Cmd
	lead chan []*call  // the batch this call sends (it heads it)
	done chan struct{} // closed once cmd is set
}

// run is s.Run(ctx, b.rdb, keys, args...), batched with calls of other
// goroutines when batchInFlight round trips are already in flight.
func (b *batcher) run(ctx context.Context, s *script, keys []string, args ...any) *redis.Cmd {
	b.mu.Lock()
	if b.busy < batchInFlight {
		b.busy++
		b.mu.Unlock()
		cmd := s.Run(ctx, b.rdb, keys, args...)
		b.next()
		return cmd
	}
	c := &call{ctx: ctx, s: s, keys: keys, args: args, lead: make(chan []*call, 1), done: make(chan struct{})}
	b.waiting = append(b.waiting, c)
	b.mu.Unlock()
	select {
	case batch := <-c.lead:
		b.head(batch)
		return c.cmd
	case <-c.done:
		return c.cmd
	case <-ctx.Done():
	}
	b.mu.Lock()
	if i := slices.Index(b.waiting, c); i >= 0 {
		// Not sent: leave the batch, as a call whose context ends before
		// it is written.
		b.waiting = slices.Delete(b.waiting, i, i+1)
		b.mu.Unlock()
		cmd := redis.NewCmd(ctx)
		cmd.SetErr(ctx.Err())
		return cmd
	}
	b.mu.Unlock()
	// In a batch already: it goes out (this call sends it if it heads
	// it), and its reply is what the server did.
	select {
	case batch := <-c.lead:
		b.head(batch)
	case <-c.done:
	}
	return c.cmd
}

// head sends batch, which the call at its head was handed, and passes the
// round trip slot on.
func (b *batcher) head(batch []*call) {
	b.send(batch)
	b.next()
}

// next ends a round trip: the calls waiting then become the next batch,
// sent by its oldest call on the slot this round trip frees.
func (b *batcher) next() {
	b.mu.Lock()
	batch := b.waiting
	b.waiting = nil
	if len(batch) == 0 {
		b.busy--
	}
	b.mu.Unlock()
	if len(batch) > 0 {
		batch[0].lead <- batch
	}
}

// send runs batch in one pipeline, on a context that no single caller's
// cancellation ends (each caller returns at its own context's end
// anyway) and whose deadline is the latest of theirs. A script the server
// lacks (NOSCRIPT: a restart, a new Cluster node) is run again alone,
// which loads it.
func (b *batcher) send(batch []*call) {
	ctx := context.WithoutCancel(batch[0].ctx)
	var latest time.Time
	for _, c := range batch {
		d, ok := c.ctx.Deadline()
		if !ok {
			latest = time.Time{}
			break
		}
		if d.After(latest) {
			latest = d
		}
	}
	if !latest.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, latest)
		defer cancel()
	}
	cmds := make([]*redis.Cmd, len(batch))
	_, _ = b.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, c := range batch {
			cmds[i] = c.s.get().EvalSha(ctx, p, c.keys, c.args...)
		}
		return nil
	})
	for i, c := range batch {
		if err := cmds[i].Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			cmds[i] = c.s.Run(ctx, b.rdb, c.keys, c.args...)
		}
		c.cmd = cmds[i]
		close(c.done)
	}
}
