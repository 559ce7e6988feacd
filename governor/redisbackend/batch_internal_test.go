package redisbackend

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/redistest"
)

// gateHook holds every EVALSHA sent alone until gate closes (saying so
// on entered), and records the size of every pipeline and the number of
// keys of every EVALSHA sent alone.
type gateHook struct {
	gate    chan struct{}
	entered chan struct{}
	mu      sync.Mutex
	pipes   []int
	keys    []int
}

func (h *gateHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *gateHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "evalsha" {
			n, _ := strconv.Atoi(fmt.Sprint(cmd.Args()[2]))
			h.mu.Lock()
			h.keys = append(h.keys, n)
			h.mu.Unlock()
		}
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
// round trips are in flight go out together in one call of many.lua, each
// with its own reply and error; one whose context ends before it is sent
// leaves the batch, unsent.
func TestBatchedCalls(t *testing.T) {
	t.Run("redis", func(t *testing.T) { batchedCalls(t, redistest.Start(t).Addr) })
	t.Run("miniredis", func(t *testing.T) { batchedCalls(t, miniredis.RunT(t).Addr()) })
}

func batchedCalls(t *testing.T, addr string) {
	rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 32})
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
	if len(h.pipes) != 0 || !slices.Contains(h.keys, 6*(n+2)) {
		t.Errorf("pipelines of %v commands, calls of %v keys; want no pipeline and one call of %d keys (the %d calls that waited together)",
			h.pipes, h.keys, 6*(n+2), n+2)
	}
}

// TestCallGroups: on one server the requests of a batch go in calls of at
// most max, in order; on a Cluster each call's requests share a hash tag.
func TestCallGroups(t *testing.T) {
	one := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer one.Close()
	cluster := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}})
	defer cluster.Close()
	keys := []string{"governor:{p/a}:holders", "governor:{p/b}:holders", "governor:{p/a}:holders", "governor:{p/c}:holders",
		"governor:{p/a}:holders"}
	keyOf := func(i int) string { return keys[i] }
	for _, tc := range []struct {
		name string
		rdb  redis.UniversalClient
		max  int
		want [][]int
	}{
		{"one server", one, 32, [][]int{{0, 1, 2, 3, 4}}},
		{"one server, max 2", one, 2, [][]int{{0, 1}, {2, 3}, {4}}},
		{"cluster", cluster, 32, [][]int{{0, 2, 4}, {1}, {3}}},
		{"cluster, max 2", cluster, 2, [][]int{{0, 2}, {4}, {1}, {3}}},
	} {
		if got := callGroups(tc.rdb, len(keys), tc.max, keyOf); !slices.EqualFunc(got, tc.want, slices.Equal) {
			t.Errorf("%s: %v; want %v", tc.name, got, tc.want)
		}
	}
}
