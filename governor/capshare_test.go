package governor_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/capacity"
	"github.com/governor-dev/governor/governor/filebackend"
	"github.com/governor-dev/governor/governor/redisbackend"
	"github.com/governor-dev/governor/internal/redistest"
)

// sharedBackends open backends on one state each call: two Governors
// on them are two processes of one fleet (each closes its own). Redis
// is a redis-server of the test's own (skipped without one).
var sharedBackends = map[string]func(t *testing.T) func() governor.Backend{
	"file": func(t *testing.T) func() governor.Backend {
		dir := t.TempDir()
		return func() governor.Backend {
			b, err := filebackend.New(dir, filebackend.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	},
	"miniredis": func(t *testing.T) func() governor.Backend { return redisAt(t, miniredis.RunT(t).Addr()) },
	"redis":     func(t *testing.T) func() governor.Backend { return redisAt(t, redistest.Start(t).Addr) },
}

// redisAt opens backends on the Redis at addr.
func redisAt(t *testing.T, addr string) func() governor.Backend {
	return func() governor.Backend {
		b, err := redisbackend.New(context.Background(), redis.NewClient(&redis.Options{Addr: addr}), redisbackend.OwnClient())
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
}

// countingBackend counts the acquires sent to the backend.
type countingBackend struct {
	governor.Backend
	acquires atomic.Int64
	cut      atomic.Bool // refuse every acquire from now on (a partition)
}

func (b *countingBackend) Acquire(ctx context.Context, req governor.Request) (governor.Result, error) {
	b.acquires.Add(1)
	if b.cut.Load() {
		return governor.Result{}, governor.ErrBackend
	}
	return b.Backend.Acquire(ctx, req)
}

var leased = map[string]capacity.Config{"hot": {Lease: 3 * time.Second, Refresh: time.Second}}

// TestHoldFromCapacityShares: two Governors (two processes' gates) with
// "hot" in Options.Capacity take many slots through Hold: the work in
// them never holds more than the limit at once, the grants come from
// the shares (far fewer backend acquires than grants), and Close gives
// each share back at once (nothing left in use, no expiry waited for).
func TestHoldFromCapacityShares(t *testing.T) {
	for name, open := range sharedBackends {
		t.Run(name, func(t *testing.T) {
			next := open(t)
			const limit, workers, each = 4, 6, 40
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var bs []*countingBackend
			var gs []*governor.Governor
			for range 2 {
				b := &countingBackend{Backend: next()}
				g, err := governor.New(b, governor.Options{Project: "p", Capacity: leased})
				if err != nil {
					t.Fatal(err)
				}
				bs, gs = append(bs, b), append(gs, g)
			}
			var inUse, most, grants atomic.Int64
			var wg sync.WaitGroup
			errs := make(chan error, 2*workers)
			for _, g := range gs {
				for range workers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for range each {
							h, err := g.Hold(ctx, governor.Ask{Wants: []governor.Want{{Resource: "hot",
								AcquireOptions: governor.AcquireOptions{Limit: limit, Mode: governor.Wait}}}})
							if err != nil {
								errs <- err
								return
							}
							// The work's interval: counted in use from the
							// grant to just before its release.
							n := inUse.Add(1)
							for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
							}
							grants.Add(1)
							if err := h.Leases[0].Err(); err != nil {
								errs <- err
							}
							time.Sleep(time.Millisecond)
							inUse.Add(-1)
							if lost, failed := h.ReleaseWith(nil); len(lost)+len(failed) > 0 {
								errs <- errors.Join(append(failed, errors.New(strings.Join(lost, ",")))...)
							}
						}
					}()
				}
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			if most.Load() > limit {
				t.Errorf("%d slots in use at once; limit %d", most.Load(), limit)
			}
			sent := bs[0].acquires.Load() + bs[1].acquires.Load()
			if n := grants.Load(); sent*2 > n {
				t.Errorf("%d backend acquires for %d grants: not granted from the shares", sent, n)
			}
			for _, g := range gs {
				if err := g.Close(); err != nil {
					t.Fatal(err)
				}
			}
			g := newGovernorOn(t, next())
			st, err := g.Status(ctx, "hot")
			if err != nil {
				t.Fatal(err)
			}
			if st.Used != 0 || len(st.Holders) != 0 {
				t.Errorf("after Close: %d in use, holders %+v; want the shares given back", st.Used, st.Holders)
			}
		})
	}
}

func newGovernorOn(t *testing.T, b governor.Backend) *governor.Governor {
	t.Helper()
	g, err := governor.New(b, governor.Options{Project: "p"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	return g
}

// TestCapacityShareLapseEndsTheLease: a slot granted from a share is a
// Lease that keeps a lease's promise: cut off from the backend, its
// Done closes and Err is ErrLeaseLost once the share's lease lapses on
// this process's clock (its Deadline), and Release says it was lost.
func TestCapacityShareLapseEndsTheLease(t *testing.T) {
	b := &countingBackend{Backend: sharedBackends["file"](t)()}
	g, err := governor.New(b, governor.Options{Project: "p", Capacity: map[string]capacity.Config{"hot": {Lease: time.Second, Refresh: 500 * time.Millisecond}}})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l, err := g.Acquire(ctx, "hot", governor.AcquireOptions{Limit: 2, Mode: governor.Wait})
	if err != nil {
		t.Fatal(err)
	}
	if l.Token() != 0 || l.Deadline().IsZero() || l.Err() != nil {
		t.Fatalf("a share's grant: token %d, deadline %v, err %v; want 0, a deadline, nil", l.Token(), l.Deadline(), l.Err())
	}
	b.cut.Store(true)
	select {
	case <-l.Done():
	case <-ctx.Done():
		t.Fatal("the grant's Done never closed after its share's lease lapsed")
	}
	if err := l.Err(); !errors.Is(err, governor.ErrLeaseLost) {
		t.Errorf("Err = %v; want ErrLeaseLost", err)
	}
	if err := l.Release(); !errors.Is(err, governor.ErrLeaseLost) {
		t.Errorf("Release = %v; want ErrLeaseLost", err)
	}
}

// TestCapacityRefusals: bad intervals refuse New; a grant a share cannot
// make (weight 2, exclusive, a queue policy) is refused, naming what
// was asked and what is allowed.
func TestCapacityRefusals(t *testing.T) {
	for _, tc := range []struct {
		c    capacity.Config
		want string
	}{
		{capacity.Config{Lease: 10 * time.Second, Refresh: 10 * time.Second}, "capacity refresh 10s with lease 10s; allowed"},
		{capacity.Config{Lease: -time.Second}, "capacity lease -1s; allowed: 1s or more"},
		{capacity.Config{Refresh: -time.Second}, "capacity refresh -1s"},
	} {
		_, err := governor.New(sharedBackends["file"](t)(), governor.Options{Capacity: map[string]capacity.Config{"hot": tc.c}})
		if !errors.Is(err, governor.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New with %+v = %v; want ErrInvalid saying %q", tc.c, err, tc.want)
		}
	}
	g, err := governor.New(sharedBackends["file"](t)(), governor.Options{Capacity: leased})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ctx := context.Background()
	for _, o := range []governor.AcquireOptions{
		{Limit: 4, Weight: 2},
		{Limit: 4, Exclusive: true},
		{Limit: 4, Policy: governor.Policy{Fair: true}, FairKey: "a"},
	} {
		_, err := g.Hold(ctx, governor.Ask{Wants: []governor.Want{{Resource: "hot", AcquireOptions: o}}})
		if !errors.Is(err, governor.ErrInvalid) || !strings.Contains(err.Error(), "hot is granted from a capacity share") {
			t.Errorf("Hold with %+v = %v; want ErrInvalid naming the share", o, err)
		}
	}
	if _, err := g.Acquire(ctx, "hot", governor.AcquireOptions{Limit: 4}); err != nil {
		t.Fatal(err)
	}
	_, err = g.Acquire(ctx, "hot", governor.AcquireOptions{Limit: 5})
	if !errors.Is(err, governor.ErrInvalid) || !strings.Contains(err.Error(), "limit 4; asked: limit 5") {
		t.Errorf("a second limit = %v; want ErrInvalid naming both", err)
	}
}
