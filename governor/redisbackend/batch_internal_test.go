package redisbackend

import (
	"context"
	"errors"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/redistest"
)

// gateHook holds every EVALSHA sent alone until gate closes (saying so
// on entered), and records the size of every pipeline.
type gateHook struct {
	gate    chan struct{}
	entered chan struct{}
	mu      sync.Mutex
	pipes   []int
}

func (h *gateHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *gateHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		select {
		case <-h.gate:
		default:
			if cmd.Name() == "evalsha" {
				h.entered <- struct{}{}
				<-h.gate
			}
		}
		return next(ctx, cmd)
	}
}

func (h *gateHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.mu.Lock()
		h.pipes = append(h.pipes, len(cmds))
		h.mu.Unlock()
		return next(ctx, cmds)
	}
}

// TestBatchedCalls: acquires and releases issued while batchInFlight
// round trips are in flight go out together in one pipeline, each with
// its own reply and error; one whose context ends before it is sent
// leaves the batch, unsent.
func TestBatchedCalls(t *testing.T) {
	s := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr, PoolSize: 32})
	defer rdb.Close()
	ctx := context.Background()
	be, err := New(ctx, rdb)
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	key := func(r string) governor.Key { return governor.Key{Project: "batch", Resource: r} }
	req := func(r string) governor.Request {
		return governor.Request{Key: key(r), ID: "id-" + r, Limit: 1, Weight: 1, TTL: time.Minute, QueueTTL: time.Minute, New: true}
	}
	// A resource whose holders key is not a sorted set: its script fails.
	if err := rdb.Set(ctx, Keys(key("broken"))[0], "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	h := &gateHook{gate: make(chan struct{}), entered: make(chan struct{}, batchInFlight)}
	rdb.AddHook(h)

	type reply struct {
		res governor.Result
		err error
	}
	var wg sync.WaitGroup
	got := map[string]reply{}
	var mu sync.Mutex
	do := func(name string, f func() (governor.Result, error)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := f()
			mu.Lock()
			got[name] = reply{res, err}
			mu.Unlock()
		}()
	}
	acquire := func(ctx context.Context, r string) func() (governor.Result, error) {
		return func() (governor.Result, error) { return be.Acquire(ctx, req(r)) }
	}
	// batchInFlight calls go out alone and are held at the gate.
	for i := range batchInFlight {
		do("alone"+strconv.Itoa(i), acquire(ctx, "alone"+strconv.Itoa(i)))
		<-h.entered
	}
	waitQueued := func(n int) {
		t.Helper()
		for end := time.Now().Add(30 * time.Second); ; {
			be.batch.mu.Lock()
			q := len(be.batch.waiting)
			be.batch.mu.Unlock()
			if q == n {
				return
			}
			if time.Now().After(end) {
				t.Fatalf("%d calls waiting for a batch; want %d", q, n)
			}
			time.Sleep(time.Millisecond)
		}
	}
	const n = 8
	for i := range n {
		do("r"+strconv.Itoa(i), acquire(ctx, "r"+strconv.Itoa(i)))
	}
	do("broken", acquire(ctx, "broken"))
	do("release", func() (governor.Result, error) {
		return governor.Result{}, be.Release(ctx, key("never"), "id-never", "")
	})
	waitQueued(n + 2)
	cctx, cancel := context.WithCancel(ctx)
	do("cancelled", acquire(cctx, "cancelled"))
	waitQueued(n + 3)
	cancel()
	waitQueued(n + 2)
	close(h.gate)
	wg.Wait()

	for i := range n {
		if r := got["r"+strconv.Itoa(i)]; r.err != nil || r.res.Outcome != governor.Granted {
			t.Errorf("r%d: %v, %v; want granted", i, r.res.Outcome, r.err)
		}
	}
	var ne net.Error
	if r := got["broken"]; r.err == nil || !strings.Contains(r.err.Error(), "WRONGTYPE") || errors.As(r.err, &ne) {
		t.Errorf("broken: %v; want its own WRONGTYPE error", r.err)
	}
	if r := got["release"]; !errors.Is(r.err, governor.ErrNotHeld) {
		t.Errorf("release of a lease never held: %v; want ErrNotHeld", r.err)
	}
	if r := got["cancelled"]; !errors.Is(r.err, context.Canceled) {
		t.Errorf("cancelled: %v; want context.Canceled", r.err)
	}
	if st, err := be.Status(ctx, key("cancelled")); err != nil || st.Used != 0 {
		t.Errorf("cancelled resource: used %d (%v); want 0: the call left its batch unsent", st.Used, err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !slices.Contains(h.pipes, n+2) {
		t.Errorf("pipelines of %v commands; want one of %d (the calls that waited together)", h.pipes, n+2)
	}
}
