package gate_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/capacity/gate"
	"github.com/governor-dev/governor/governor/filebackend"
)

func fileBackend(t *testing.T) governor.Backend {
	t.Helper()
	b, err := filebackend.New(t.TempDir(), filebackend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func open(t *testing.T, b governor.Backend, o gate.Options) *gate.Gate {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	g, err := gate.New(ctx, b, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	return g
}

var key = governor.Key{Project: "gate", Resource: "provider:hot"}

// fast are Options for tests on real time: a short lease, refreshed
// often.
func fast(limit int) gate.Options {
	return gate.Options{Key: key, Limit: limit, Lease: 3 * time.Second, Refresh: 100 * time.Millisecond, Margin: 300 * time.Millisecond}
}

// TestGatesNeverOverLimit: two gates on one resource, each with
// goroutines taking slots, never have more than the limit in use at
// once, and both are granted.
func TestGatesNeverOverLimit(t *testing.T) {
	b := fileBackend(t)
	const limit = 4
	gs := []*gate.Gate{open(t, b, fast(limit)), open(t, b, fast(limit))}
	var inUse, most atomic.Int64
	var granted [2]atomic.Int64
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for i, g := range gs {
		for range 6 {
			wg.Go(func() {
				for ctx.Err() == nil {
					gr, err := g.Acquire(ctx)
					if err != nil {
						return
					}
					n := inUse.Add(1)
					for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
					}
					granted[i].Add(1)
					select {
					case <-time.After(time.Millisecond):
					case <-gr.Context().Done():
					}
					inUse.Add(-1)
					gr.Release()
				}
			})
		}
	}
	wg.Wait()
	if most.Load() > limit {
		t.Fatalf("%d slots in use at once, above the limit %d", most.Load(), limit)
	}
	if granted[0].Load() == 0 || granted[1].Load() == 0 {
		t.Fatalf("grants %d and %d: each gate should be granted", granted[0].Load(), granted[1].Load())
	}
	t.Logf("grants: %d and %d", granted[0].Load(), granted[1].Load())
	for _, g := range gs {
		if err := g.Close(); err != nil {
			t.Fatal(err)
		}
	}
	wantLocalGrants(t, b, granted[0].Load()+granted[1].Load())
}

// wantLocalGrants fails t unless the backend counts n local grants of
// key.
func wantLocalGrants(t *testing.T, b governor.Backend, n int64) {
	t.Helper()
	st, err := b.Status(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	if st.Counters.LocalGrants != n {
		t.Fatalf("the backend counts %d local grants, want %d: %+v", st.Counters.LocalGrants, n, st.Counters)
	}
}

// TestGateReportsItsGrants: a gate's refreshes report the grants made
// since it opened, and its release at Close the rest: the backend counts
// each grant once (Counters.LocalGrants).
func TestGateReportsItsGrants(t *testing.T) {
	b := fileBackend(t)
	g := open(t, b, fast(2))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	take := func(n int) {
		for range n {
			gr, err := g.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			gr.Release()
		}
	}
	take(3)
	for {
		st, err := b.Status(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if st.Counters.LocalGrants == 3 {
			break
		}
		if st.Counters.LocalGrants > 3 {
			t.Fatalf("%d local grants counted after 3", st.Counters.LocalGrants)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no refresh reported the 3 grants within a minute: %d counted", st.Counters.LocalGrants)
		case <-time.After(10 * time.Millisecond):
		}
	}
	take(2)
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	wantLocalGrants(t, b, 5)
}

// blocking is a backend whose capacity refreshes block once cut is
// closed, as if the process were cut off from it.
type blocking struct {
	governor.Backend
	cut chan struct{}
}

func (b *blocking) Acquire(ctx context.Context, r governor.Request) (governor.Result, error) {
	if r.Capacity != nil {
		select {
		case <-b.cut:
			<-ctx.Done()
			return governor.Result{}, ctx.Err()
		default:
		}
	}
	return b.Backend.Acquire(ctx, r)
}

// TestGateStopsBeforeItsShareExpires: a gate cut off from its backend
// ends its grants' contexts and grants nothing more at its local
// deadline, while the backend still counts its share: so its share is
// never granted elsewhere while it grants.
func TestGateStopsBeforeItsShareExpires(t *testing.T) {
	fb := fileBackend(t)
	b := &blocking{Backend: fb, cut: make(chan struct{})}
	g := open(t, b, fast(2))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	gr, err := g.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer gr.Release()
	close(b.cut)
	<-gr.Context().Done()
	if !errors.Is(gr.Err(), gate.ErrLost) {
		t.Fatalf("the grant's Err when its context ended: %v, want ErrLost", gr.Err())
	}
	st, err := fb.Status(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if st.Used == 0 || len(st.Holders) != 1 || st.Holders[0].LeaseID != g.ID() {
		t.Fatalf("when the grant's context ended, the backend held %+v: the share was already free", st.Holders)
	}
	short, stop := context.WithTimeout(ctx, 200*time.Millisecond)
	defer stop()
	if _, err := g.Acquire(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("an acquire past the deadline: %v, want to wait (no grant)", err)
	}
}

// TestGateReleasesOnClose: Close gives the share back at once.
func TestGateReleasesOnClose(t *testing.T) {
	b := fileBackend(t)
	g := open(t, b, fast(3))
	gr, err := g.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	gr.Release()
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := b.Status(context.Background(), key)
	if err != nil || st.Used != 0 {
		t.Fatalf("after Close: used %d, %v", st.Used, err)
	}
	if _, err := g.Acquire(context.Background()); !errors.Is(err, gate.ErrClosed) {
		t.Fatalf("Acquire after Close: %v", err)
	}
}

// TestGateBadOptions: bad options name the value and what is allowed.
func TestGateBadOptions(t *testing.T) {
	for _, o := range []gate.Options{{Key: key}, {Key: key, Limit: 1, Lease: time.Second, Refresh: time.Second}} {
		if _, err := gate.New(context.Background(), fileBackend(t), o); !errors.Is(err, governor.ErrInvalid) {
			t.Errorf("New(%+v): %v, want ErrInvalid", o, err)
		}
	}
}

// lapsing is a backend whose capacity refreshes are held until let
// goes, then answered: the answer comes after the lease lapsed.
type lapsing struct {
	governor.Backend
	hold, let chan struct{}
}

func (b *lapsing) Acquire(ctx context.Context, r governor.Request) (governor.Result, error) {
	if r.Capacity != nil && !r.Capacity.Release {
		select {
		case <-b.hold:
			<-b.let
		default:
		}
	}
	return b.Backend.Acquire(ctx, r)
}

// TestGateLapseEndsItsGrants: a grant made before the lease lapsed stays
// lost although a later refresh is answered (its share may have gone
// elsewhere meanwhile); a new grant is valid.
func TestGateLapseEndsItsGrants(t *testing.T) {
	b := &lapsing{Backend: fileBackend(t), hold: make(chan struct{}), let: make(chan struct{})}
	o := fast(2)
	o.Refresh = 50 * time.Millisecond
	o.Lease, o.Margin = time.Second, 100*time.Millisecond
	g := open(t, b, o)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	old, err := g.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	close(b.hold)
	<-old.Context().Done()
	close(b.let)
	nu, err := g.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer nu.Release()
	if !errors.Is(old.Err(), gate.ErrLost) || nu.Err() != nil {
		t.Fatalf("after the lapse and a refresh: the old grant %v (want ErrLost), the new one %v", old.Err(), nu.Err())
	}
	old.Release()
}

// TestGateNewcomerAtSaturation: a gate whose goroutines keep the whole
// limit in use gives a newcomer its fair part: it shrinks to its
// entitlement at its next refresh, its calls above it end, it says so at
// once (others wait), and the newcomer's refresh takes the room it
// wants (one slot: max-min gives it all it wants).
func TestGateNewcomerAtSaturation(t *testing.T) {
	b := fileBackend(t)
	const limit = 4
	a := open(t, b, fast(limit))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	busy, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stop(); wg.Wait() }()
	for range limit {
		wg.Go(func() {
			for busy.Err() == nil {
				gr, err := a.Acquire(busy)
				if err != nil {
					return
				}
				time.Sleep(5 * time.Millisecond)
				gr.Release()
			}
		})
	}
	for share, _ := a.Share(); share < limit; share, _ = a.Share() {
		time.Sleep(10 * time.Millisecond) // until the first gate holds it all
	}
	n := open(t, b, fast(limit))
	gr, err := n.Acquire(ctx)
	if err != nil {
		t.Fatalf("the newcomer beside a saturating gate: %v", err)
	}
	defer gr.Release()
	if share, inUse := n.Share(); share < 1 || inUse != 1 {
		t.Fatalf("the newcomer granted with share %d, %d in use", share, inUse)
	}
}
