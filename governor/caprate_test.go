package governor_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/capacity"
)

// rateCounting counts the rate reservations (and share refreshes) and
// the settles of tokens sent to a backend.
type rateCounting struct {
	governor.Backend
	governor.RateBackend
	reserves, shares, adjusts atomic.Int64
}

func (b *rateCounting) RateReserve(ctx context.Context, req governor.RateRequest) (governor.RateResult, error) {
	if req.Share != nil {
		b.shares.Add(1)
	} else {
		b.reserves.Add(1)
	}
	return b.RateBackend.RateReserve(ctx, req)
}

// TestHoldFromRateShares: two Governors (two processes) with a
// provider's requests in Options.Capacity take them through Provider.Do
// from their rate shares: no reservation per call, a few share
// refreshes, and in any window of the limit's period no more requests
// than its rate and burst, the central limiter's own bound. The backend
// counts each request granted locally once (RateStatus.LocalGrants).
func TestHoldFromRateShares(t *testing.T) {
	for _, name := range []string{"file", "miniredis"} {
		t.Run(name, func(t *testing.T) {
			next := sharedBackends[name](t)
			limits := governor.ProviderLimits{Requests: governor.RateLimit{Rate: 200, Period: time.Second, Burst: 20}}
			cfg := map[string]capacity.Config{"provider:fast": {Lease: 3 * time.Second, Refresh: time.Second}}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			const each = 150
			var mu sync.Mutex
			var at []time.Time
			var wg sync.WaitGroup
			var bs []*rateCounting
			var gs []*governor.Governor
			for range 2 {
				b := next()
				rb := &rateCounting{Backend: b, RateBackend: b.(governor.RateBackend)}
				bs = append(bs, rb)
				g, err := governor.New(rb, governor.Options{Project: "prj-0001", Capacity: cfg})
				if err != nil {
					t.Fatal(err)
				}
				p := g.Provider("fast", limits)
				for range 4 {
					wg.Go(func() {
						for range each / 4 {
							if err := p.Do(ctx, 0, func(context.Context) (int64, error) {
								mu.Lock()
								at = append(at, time.Now())
								mu.Unlock()
								return 0, nil
							}); err != nil {
								t.Error(err)
								return
							}
						}
					})
				}
				gs = append(gs, g)
			}
			wg.Wait()
			for _, g := range gs {
				if err := g.Close(); err != nil {
					t.Error(err)
				}
			}
			// Each bucket's refreshes and its release report its grants.
			rs, err := next().(governor.RateBackend).RateStatus(ctx, governor.Key{Project: "prj-0001", Resource: "provider:fast"})
			if err != nil {
				t.Fatal(err)
			}
			if n := int64(len(at)); rs.LocalGrants != n || len(rs.Shares) != 0 || rs.Allowed != 0 {
				t.Errorf("after both closed: %d local grants, %d reservations allowed, shares %+v; want %d, 0, none",
					rs.LocalGrants, rs.Allowed, rs.Shares, n)
			}
			slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
			for i, j := 0, 0; i < len(at); i++ {
				for at[i].Sub(at[j]) >= time.Second {
					j++
				}
				if n := i - j + 1; n > 220 {
					t.Fatalf("%d requests in one second from %v, more than the rate and burst (220)", n, at[j])
				}
			}
			for i, b := range bs {
				if n := b.reserves.Load(); n != 0 {
					t.Errorf("process %d: %d reservations of its own, want 0 (all from its share)", i, n)
				}
				if n := b.shares.Load(); n == 0 || n > each/3 {
					t.Errorf("process %d: %d share refreshes for %d requests", i, n, each)
				}
			}
		})
	}
}

// TestRateShareRefusals: a request of another limit than the share's
// (requests or tokens) is refused, and one the share cannot grant
// (Shadow) stays central.
func TestRateShareRefusals(t *testing.T) {
	b := sharedBackends["file"](t)()
	rb := &rateCounting{Backend: b, RateBackend: b.(governor.RateBackend)}
	g, err := governor.New(rb, governor.Options{Project: "prj-0001",
		Capacity: map[string]capacity.Config{"provider:fast": {Lease: 3 * time.Second, Refresh: time.Second}}})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ctx := context.Background()
	run := func(context.Context) (int64, error) { return 0, nil }
	if err := g.Provider("fast", governor.ProviderLimits{Requests: governor.PerMinute(600)}).Do(ctx, 0, run); err != nil {
		t.Fatal(err)
	}
	if n := rb.reserves.Load(); n != 0 {
		t.Fatalf("%d central reservations for a request from the share, want 0", n)
	}
	if err := g.Provider("fast", governor.ProviderLimits{Requests: governor.PerMinute(500)}).Do(ctx, 0, run); !errors.Is(err, governor.ErrInvalid) {
		t.Fatalf("another limit than the share's: %v, want ErrInvalid", err)
	}
	if err := g.Provider("fast", governor.ProviderLimits{Requests: governor.PerMinute(600), Tokens: governor.PerMinute(1000)}).Do(ctx, 10, run); err != nil {
		t.Fatal(err)
	}
	if n := rb.reserves.Load(); n != 0 {
		t.Fatalf("%d central reservations for a request with a tokens limit, want 0", n)
	}
	err = g.Provider("fast", governor.ProviderLimits{Requests: governor.PerMinute(600), Tokens: governor.PerMinute(2000)}).Do(ctx, 10, run)
	if !errors.Is(err, governor.ErrInvalid) || !strings.Contains(err.Error(), "tokens") {
		t.Fatalf("another tokens limit than the share's: %v, want ErrInvalid naming the tokens", err)
	}
	if err := g.Provider("fast", governor.ProviderLimits{Requests: governor.PerMinute(600), Shadow: true}).Do(ctx, 0, run); err != nil {
		t.Fatal(err)
	}
	if n := rb.reserves.Load(); n == 0 {
		t.Fatal("no central reservation for a Shadow request")
	}
}

func (b *rateCounting) RateAdjust(ctx context.Context, a governor.RateAdjustment) error {
	b.adjusts.Add(1)
	return b.RateBackend.RateAdjust(ctx, a)
}

// TestHoldFromTokenShares: two Governors with a provider's requests and
// tokens in Options.Capacity take both through Provider.Do from their
// two rate shares, and settle each call's tokens into their tokens'
// share: no reservation and no settle sent to the backend, refreshes
// at most every tenth of the interval, and in any period no more tokens used (each call's actual,
// always at or above its estimate) than the rate over it and the burst,
// and the actuals of the calls in flight at either end.
func TestHoldFromTokenShares(t *testing.T) {
	for _, name := range []string{"file", "miniredis"} {
		t.Run(name, func(t *testing.T) {
			next := sharedBackends[name](t)
			const rate, burst = 400, 40
			limits := governor.ProviderLimits{Requests: governor.RateLimit{Rate: 1000, Period: time.Second},
				Tokens: governor.RateLimit{Rate: rate, Period: time.Second, Burst: burst}}
			cfg := map[string]capacity.Config{"provider:fast": {Lease: 3 * time.Second, Refresh: time.Second}}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			const each, workers, estimate, over = 60, 2, 10, 20
			start := time.Now()
			type use struct {
				at     time.Time
				tokens int64
			}
			var mu sync.Mutex
			var uses []use
			var wg sync.WaitGroup
			var bs []*rateCounting
			for p := range 2 {
				b := next()
				rb := &rateCounting{Backend: b, RateBackend: b.(governor.RateBackend)}
				bs = append(bs, rb)
				g, err := governor.New(rb, governor.Options{Project: "prj-0001", Capacity: cfg})
				if err != nil {
					t.Fatal(err)
				}
				pr := g.Provider("fast", limits)
				for w := range workers {
					wg.Go(func() {
						for i := range each / workers {
							used := int64(estimate + (p+w+i)%(over+1)) // 10 to 30: at or above the estimate
							if err := pr.Do(ctx, estimate, func(context.Context) (int64, error) {
								mu.Lock()
								uses = append(uses, use{time.Now(), used})
								mu.Unlock()
								return used, nil
							}); err != nil {
								t.Error(err)
								return
							}
						}
					})
				}
				defer func() {
					if err := g.Close(); err != nil {
						t.Error(err)
					}
				}()
			}
			wg.Wait()
			slices.SortFunc(uses, func(a, b use) int { return a.at.Compare(b.at) })
			const inFlight = 2 * 2 * workers * over // the overshoot of the calls in flight, at either end
			for i := range uses {
				var sum int64
				for _, u := range uses[i:] {
					sum += u.tokens
					if bound := rate*u.at.Sub(uses[i].at).Seconds() + burst + inFlight; float64(sum) > bound {
						t.Fatalf("%d tokens used from %v to %v, more than the rate over it and the burst and the calls in flight (%.0f)",
							sum, uses[i].at, u.at, bound)
					}
				}
			}
			for i, b := range bs {
				if n, a := b.reserves.Load(), b.adjusts.Load(); n != 0 || a != 0 {
					t.Errorf("process %d: %d reservations and %d settles of its own, want 0 (all from its shares)", i, n, a)
				}
				// Two shares, each refreshed at most every tenth of Refresh.
				if n, most := b.shares.Load(), 2*(10*int64(time.Since(start)/time.Second)+12); n == 0 || n > most {
					t.Errorf("process %d: %d share refreshes, want 1 to %d", i, n, most)
				}
			}
		})
	}
}

// TestRateShareCoolsAtOnce: the process whose own call got the
// rate-limit signal stops granting from its rate share at once (its
// bucket, refilling at 600 a second, had tokens), and refreshes its
// share, which the cool-off shrinks to 0, without waiting for its next
// refresh (50 s here, past the deadline).
func TestRateShareCoolsAtOnce(t *testing.T) {
	b := sharedBackends["file"](t)()
	rb := &rateCounting{Backend: b, RateBackend: b.(governor.RateBackend)}
	g, err := governor.New(rb, governor.Options{Project: "prj-0001",
		Capacity: map[string]capacity.Config{"provider:fast": {Lease: 2 * time.Minute, Refresh: 50 * time.Second}}})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := g.Provider("fast", governor.ProviderLimits{Requests: governor.RateLimit{Rate: 600, Period: time.Second}})
	ran := 0
	run := func(context.Context) (int64, error) { ran++; return 0, nil }
	if err := p.Do(ctx, 0, run); err != nil {
		t.Fatal(err)
	}
	refreshes := rb.shares.Load()
	limited := governor.RateLimited{RetryAfter: time.Minute, Reason: "HTTP 429"}
	if err := p.Do(ctx, 0, func(context.Context) (int64, error) { return 0, limited }); !errors.As(err, new(governor.RateLimited)) {
		t.Fatalf("the limited call: %v", err)
	}
	// Any wait shows it: nothing may be granted in the minute's cool-off.
	wait, stop := context.WithTimeout(ctx, time.Second)
	defer stop()
	if err := p.Do(wait, 0, run); !errors.Is(err, context.DeadlineExceeded) || ran != 1 {
		t.Fatalf("a call after the signal: %v, ran %d calls, want none granted", err, ran)
	}
	for deadline := time.Now().Add(30 * time.Second); rb.shares.Load() == refreshes; {
		if time.Now().After(deadline) {
			t.Fatal("no refresh of the share within 30s of the signal")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
