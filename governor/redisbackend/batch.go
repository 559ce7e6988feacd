package redisbackend

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	scripts "github.com/governor-dev/governor/scripts-lua"
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
	keys *resourceKeys
	args []any
	cmd  *redis.Cmd
	lead chan []*call  // the batch this call sends (it heads it)
	done chan struct{} // closed once cmd is set
}

// run is s.Run(ctx, b.rdb, keys.keys, args...), batched with calls of
// other goroutines when batchInFlight round trips are already in flight.
func (b *batcher) run(ctx context.Context, s *script, keys *resourceKeys, args ...any) *redis.Cmd {
	b.mu.Lock()
	if b.busy < batchInFlight {
		b.busy++
		b.mu.Unlock()
		cmd := s.runBoxed(ctx, b.rdb, keys.keys, keys.boxed, args...)
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

// maxMany caps the requests one call of many.lua carries: Redis runs
// nothing else while a script runs (an uncontended acquire or release
// takes it about 15 µs, one behind a long queue more), so a call blocks
// it well under a millisecond.
const maxMany = 32

// manyScript runs several acquires and releases in one call (many.lua).
var manyScript = newScript(scripts.Many)

// manyOp is how many.lua names the script of c ("" for one it does not
// carry: such a call goes alone).
func manyOp(s *script) string {
	switch s {
	case acquireScript:
		return "a"
	case releaseScript:
		return "r"
	}
	return ""
}

// send runs batch as one call of many.lua (on a Cluster one per hash
// slot, in one pipeline, which go-redis splits by node), on a context
// that no single caller's cancellation ends (each caller returns at its
// own context's end anyway) and whose deadline is the latest of theirs.
// One call for all saves the server the cost of each call around its
// script. A script the server lacks (NOSCRIPT: a restart, a new Cluster
// node) is run again alone, which loads it.
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
	// Calls of a script many.lua does not carry go alone.
	var carried, alone []int
	for i, c := range batch {
		if manyOp(c.s) != "" {
			carried = append(carried, i)
		} else {
			alone = append(alone, i)
		}
	}
	groups := callGroups(b.rdb, len(carried), maxMany, func(k int) string { return batch[carried[k]].keys.keys[0] })
	for _, g := range groups {
		for k := range g {
			g[k] = carried[g[k]]
		}
	}
	for _, i := range alone {
		groups = append(groups, []int{i})
	}
	type scriptCall struct {
		s     *script
		keys  []string
		boxed []any
		args  []any
	}
	calls := make([]scriptCall, len(groups))
	for gi, g := range groups {
		if len(g) == 1 {
			c := batch[g[0]]
			calls[gi] = scriptCall{c.s, c.keys.keys, c.keys.boxed, c.args}
			continue
		}
		keys := make([]string, 0, 6*len(g))
		boxed := make([]any, 0, 6*len(g))
		var args []any
		for _, i := range g {
			c := batch[i]
			keys = append(keys, c.keys.keys...)
			boxed = append(boxed, c.keys.boxed...)
			args = append(append(args, manyOp(c.s), len(c.args)), c.args...)
		}
		calls[gi] = scriptCall{manyScript, keys, boxed, args}
	}
	cmds := make([]*redis.Cmd, len(groups))
	if len(calls) == 1 {
		cmds[0] = calls[0].s.runBoxed(ctx, b.rdb, calls[0].keys, calls[0].boxed, calls[0].args...)
	} else {
		_, _ = b.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for gi, sc := range calls {
				cmds[gi] = sc.s.evalSha(ctx, sc.boxed, sc.args)
				_ = p.Process(ctx, cmds[gi])
			}
			return nil
		})
		for gi, sc := range calls {
			if err := cmds[gi].Err(); err != nil && (errors.Is(err, redis.ErrNoScript) || redis.HasErrorPrefix(err, "NOSCRIPT")) {
				cmds[gi] = sc.s.Run(ctx, b.rdb, sc.keys, sc.args...)
			}
		}
	}
	for gi, g := range groups {
		if len(g) == 1 {
			batch[g[0]].cmd = cmds[gi]
			continue
		}
		v, err := cmds[gi].Slice()
		for j, i := range g {
			cmd := redis.NewCmd(ctx)
			switch {
			case err != nil:
				cmd.SetErr(err)
			case j >= len(v):
				cmd.SetErr(fmt.Errorf("governor: redis: many.lua: %d replies for %d requests", len(v), len(g)))
			default:
				if msg, ok := v[j].(string); ok {
					cmd.SetErr(scriptError(msg)) // the error its script raised
				} else {
					cmd.SetVal(v[j])
				}
			}
			batch[i].cmd = cmd
		}
	}
	for _, c := range batch {
		close(c.done)
	}
}
