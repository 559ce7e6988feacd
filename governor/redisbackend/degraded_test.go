package redisbackend_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/eventkind"
	"github.com/governor-dev/governor/governor/redisbackend"
	"github.com/governor-dev/governor/internal/redistest"
)

// TestDegradedModes stops a real redis-server mid-run and starts it
// again: on_backend_down closed waits (nothing runs), open lets every
// call through and counts it, local:2 lets 2 at once through in this
// process; entering and leaving are said once each, OnDegraded (the
// governor_degraded gauge) follows, and once the backend is back it
// holds an event saying who ran how many calls without it.
func TestDegradedModes(t *testing.T) {
	s := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	// The restarted server has lost the data: no quarantine for this test.
	b, err := redisbackend.New(context.Background(), rdb, redisbackend.OwnClient(), redisbackend.LossQuarantine(false))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var logs []string
	gauge := map[string]bool{}
	g, err := governor.New(b, governor.Options{Project: "degraded", Session: "agent-1",
		Log:        func(m string) { mu.Lock(); logs = append(logs, m); mu.Unlock() },
		OnDegraded: func(r string, on bool) { mu.Lock(); gauge[r] = on; mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	provider := func(name, policy string) *governor.Provider {
		pol, err := governor.ParseBackendDown(policy)
		if err != nil {
			t.Fatal(err)
		}
		return g.Provider(name, governor.ProviderLimits{MaxConcurrency: 2, OnBackendDown: pol})
	}
	closed, open, local := provider("closed", "closed"), provider("open", "open"), provider("local", "local:2")
	// run calls p n times at once, each call 100ms, and returns how many
	// ran, the peak at once, and the errors. With gather, each call stays
	// in until all n are in at once (or 10s pass): a peak below n then
	// proves a limit, not a slow machine.
	run := func(p *governor.Provider, n int, timeout time.Duration, gather ...bool) (ran, peak int64, errs []error) {
		var in atomic.Int64
		var wg sync.WaitGroup
		var emu sync.Mutex
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), timeout)
				defer cancel()
				err := p.Do(ctx, 0, func(context.Context) (int64, error) {
					c := in.Add(1)
					for {
						m := atomic.LoadInt64(&peak)
						if c <= m || atomic.CompareAndSwapInt64(&peak, m, c) {
							break
						}
					}
					atomic.AddInt64(&ran, 1)
					time.Sleep(100 * time.Millisecond)
					for end := time.Now().Add(10 * time.Second); len(gather) > 0 && atomic.LoadInt64(&peak) < int64(n) && time.Now().Before(end); {
						time.Sleep(10 * time.Millisecond)
					}
					in.Add(-1)
					return 0, nil
				})
				if err != nil {
					emu.Lock()
					errs = append(errs, err)
					emu.Unlock()
				}
			}()
		}
		wg.Wait()
		return ran, peak, errs
	}
	for _, p := range []*governor.Provider{closed, open, local} {
		if ran, _, errs := run(p, 1, 10*time.Second); ran != 1 || errs != nil {
			t.Fatalf("with the backend up: ran %d, %v", ran, errs)
		}
	}

	s.Stop()
	if ran, _, errs := run(closed, 2, 2*time.Second); ran != 0 || len(errs) != 2 {
		t.Fatalf("closed, backend down: ran %d, errors %v; want nothing run, both ended by their deadline", ran, errs)
	}
	if ran, peak, errs := run(open, 5, 20*time.Second, true); ran != 5 || peak != 5 || errs != nil {
		t.Fatalf("open, backend down: ran %d (peak %d at once), %v; want all 5 through", ran, peak, errs)
	}
	if ran, peak, errs := run(local, 6, 20*time.Second); ran != 6 || peak != 2 || errs != nil {
		t.Fatalf("local:2, backend down: ran %d (peak %d at once), %v; want all 6, 2 at once", ran, peak, errs)
	}
	if d := g.Degraded(); len(d) != 2 || d["provider:open"].IsZero() || d["provider:local"].IsZero() {
		t.Fatalf("Degraded() = %v; want provider:open and provider:local", d)
	}
	mu.Lock()
	if !gauge["provider:open"] || !gauge["provider:local"] || gauge["provider:closed"] {
		t.Errorf("OnDegraded: %v", gauge)
	}
	mu.Unlock()

	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*governor.Provider{closed, open, local} {
		if ran, _, errs := run(p, 1, 30*time.Second); ran != 1 || errs != nil {
			t.Fatalf("with the backend back: ran %d, %v", ran, errs)
		}
	}
	if d := g.Degraded(); len(d) != 0 {
		t.Fatalf("Degraded() = %v after the backend came back", d)
	}
	mu.Lock()
	defer mu.Unlock()
	if gauge["provider:open"] || gauge["provider:local"] {
		t.Errorf("OnDegraded after the backend came back: %v", gauge)
	}
	for _, r := range []string{"provider:open", "provider:local"} {
		var in, out int
		for _, l := range logs {
			if strings.Contains(l, r+": DEGRADED") {
				in++
			}
			if strings.Contains(l, r+": the backend is back") {
				out++
			}
		}
		if in != 1 || out != 1 {
			t.Errorf("%s: %d DEGRADED lines, %d back lines; want one each:\n%s", r, in, out, strings.Join(logs, "\n"))
		}
	}
	for r, want := range map[string]string{"provider:open": "5 calls let through", "provider:local": "6 calls let through"} {
		evs, err := b.Events(context.Background(), governor.Key{Project: "degraded", Resource: r}, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, e := range evs {
			found = found || e.Kind == eventkind.Degraded && strings.Contains(e.Detail, want) && strings.Contains(e.Detail, "agent-1")
		}
		if !found {
			t.Errorf("%s: no degraded event with %q: %+v", r, want, evs)
		}
	}
	if _, err := governor.ParseBackendDown("local:0"); !errors.Is(err, governor.ErrInvalid) {
		t.Errorf("local:0: %v", err)
	}
}
