package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/eventkind"
	"github.com/governor-dev/governor/governor/redisbackend"
	"github.com/governor-dev/governor/internal/redistest"
)

// The fleet test's processes: this test binary re-executed as a Go agent
// calling the fake provider through Provider.Do (fleetAgentEnv), or as
// the command of a `governor run --backoff-exit-code` that makes one call
// (fleetProbeEnv).
const (
	fleetAgentEnv = "GOVERNOR_TEST_FLEET_AGENT" // "REDIS_URL PROVIDER_URL NAME CALLS"
	fleetProbeEnv = "GOVERNOR_TEST_FLEET_PROBE" // "PROVIDER_URL NAME"
	fleetBackoff  = 42                          // the probe's exit code on a 429
	fleetMax      = 6                           // providers.fake.max_concurrency
	fleetEvery    = 3                           // providers.fake.adaptive_increase_every
	fleetRetry    = 800 * time.Millisecond      // the fake's retry-after
	fleetWork     = 80 * time.Millisecond       // how long the fake takes per call
)

func fleetHelper() (int, bool) {
	if v := os.Getenv(fleetProbeEnv); v != "" {
		var url, name string
		fmt.Sscan(v, &url, &name)
		resp, err := fleetCall(context.Background(), url, name)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1, true
		}
		if governor.SignalFromHTTP(resp).Limited {
			return fleetBackoff, true
		}
		return 0, true
	}
	v := os.Getenv(fleetAgentEnv)
	if v == "" {
		return 0, false
	}
	var redisURL, url, name string
	var calls int
	fmt.Sscan(v, &redisURL, &url, &name, &calls)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rdb, err := redisbackend.NewClient(redisURL)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1, true
	}
	b, err := redisbackend.New(ctx, rdb, redisbackend.OwnClient())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1, true
	}
	g, err := governor.New(b, governor.Options{Project: runProject, Session: name})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1, true
	}
	defer g.Close()
	p := g.Provider("fake", governor.ProviderLimits{MaxConcurrency: fleetMax, Adaptive: &governor.Adaptive{Min: 1, IncreaseEvery: fleetEvery}})
	for ok := 0; ok < calls; {
		err := p.Do(ctx, 0, func(ctx context.Context) (int64, error) {
			resp, err := fleetCall(ctx, url, name)
			if err != nil {
				return 0, err
			}
			return 0, governor.SignalFromHTTP(resp).Err()
		})
		var rl governor.RateLimited
		switch {
		case err == nil:
			ok++
		case !errors.As(err, &rl):
			fmt.Fprintln(os.Stderr, err)
			return 1, true
		default:
			// Do recorded the signal before it returned: the limit in
			// force now is the halved one (see TestFleetBackpressure).
			st, err := g.Status(ctx, governor.ProviderResource("fake"))
			if err != nil || st.Adaptive == nil {
				fmt.Fprintln(os.Stderr, "status after a signal:", st.Adaptive, err)
				return 1, true
			}
			fmt.Printf("limit-after-signal %d\n", st.Adaptive.Limit)
		}
	}
	return 0, true
}

func fleetCall(ctx context.Context, url, name string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("X-Agent", name)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp, nil
}

// fakeProvider answers 429 (retry-after-ms) to a call beyond its
// capacity of calls in flight, and records every call.
type fakeProvider struct {
	mu       sync.Mutex
	capacity int
	inFlight int
	peak     int
	calls    []fakeCall
}

type fakeCall struct {
	agent   string
	at      time.Time
	limited bool
}

func (f *fakeProvider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.inFlight++
	f.peak = max(f.peak, f.inFlight)
	limited := f.inFlight > f.capacity
	f.calls = append(f.calls, fakeCall{agent: r.Header.Get("X-Agent"), at: time.Now(), limited: limited})
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.inFlight--
		f.mu.Unlock()
	}()
	if limited {
		w.Header().Set("retry-after-ms", strconv.FormatInt(fleetRetry.Milliseconds(), 10))
		w.Header().Set("x-should-retry", "true")
		w.WriteHeader(http.StatusTooManyRequests)
		return
	}
	time.Sleep(fleetWork)
	w.WriteHeader(http.StatusOK)
}

func (f *fakeProvider) snapshot() ([]fakeCall, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeCall(nil), f.calls...), f.peak
}

// TestFleetBackpressure: Go agents (Provider.Do) and shell agents
// (governor run --backoff-exit-code), each its own process, call a fake
// provider that takes 2 calls at once and answers 429 beyond. After a
// 429, the fake gets at most one call per process during the cool-off
// it asked for (the calls already past the gate); the adaptive limit
// comes down to the fake's capacity; and once the fake takes more, it
// climbs back.
func TestFleetBackpressure(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs a fleet of processes")
	}
	s := redistest.Start(t)
	fake := &fakeProvider{capacity: 2}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	cfg := fmt.Sprintf("providers:\n  fake:\n    max_concurrency: %d\n    adaptive: true\n    adaptive_min: 1\n    adaptive_increase_every: %d\n", fleetMax, fleetEvery)
	tg := &target{bin: governorBin(t), name: "redis", redisURL: s.URL(), config: writeRunConfig(t, cfg)}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const goAgents, shellAgents, calls = 3, 2, 12
	var wg sync.WaitGroup
	errs := make(chan error, goAgents+shellAgents)
	g := tg.governor(t)
	afterSignal := make(chan int, 1000) // the adaptive limit right after each signal
	for i := range goAgents {
		wg.Go(func() {
			c := exec.Command(self, "-test.run=^$")
			c.Env = append(cleanEnv(), fmt.Sprintf("%s=%s %s go%d %d", fleetAgentEnv, s.URL(), srv.URL, i, calls))
			out, err := c.Output()
			if err != nil {
				errs <- fmt.Errorf("go agent %d: %v\n%s", i, err, out)
			}
			for _, l := range strings.Split(string(out), "\n") {
				if n, ok := strings.CutPrefix(l, "limit-after-signal "); ok {
					v, _ := strconv.Atoi(n)
					afterSignal <- v
				}
			}
		})
	}
	for i := range shellAgents {
		wg.Go(func() {
			for ok := 0; ok < calls; {
				c := tg.command("run", "--provider", "fake", "--if-busy", "wait", "--wait-timeout", "2m",
					"--backoff-exit-code", strconv.Itoa(fleetBackoff), "--", self, "-test.run=^$")
				c.Env = append(c.Env, fmt.Sprintf("%s=%s sh%d", fleetProbeEnv, srv.URL, i))
				code, _, stderr := execCode(t, c)
				switch code {
				case 0:
					ok++
				case fleetBackoff: // the run recorded the signal before it exited
					afterSignal <- tg.status(t, g, "provider:fake").Adaptive.Limit
				default:
					errs <- fmt.Errorf("shell agent %d: exit %d %s", i, code, stderr)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got, peak := fake.snapshot()
	var limited int
	for _, c := range got {
		if c.limited {
			limited++
		}
	}
	if limited == 0 {
		t.Fatalf("the fake never answered 429 (peak %d in flight): the test proves nothing", peak)
	}
	// During each cool-off a 429 asked for, from when it was recorded
	// (its event: the agent that got the 429 reports it, which a loaded
	// machine delays, and calls granted before then are no breach), each
	// process calls at most once more: the call it had past the gate
	// already. (Counted from the 429's arrival instead, the portable
	// rerun at load 40 saw an agent call twice.)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	evs, err := g.Events(ctx, "provider:fake", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	var coolOffs int
	for _, e := range evs {
		if e.Kind != eventkind.CoolOff {
			continue
		}
		coolOffs++
		per := map[string]int{}
		for _, d := range got {
			if !d.at.Before(e.At) && d.at.Sub(e.At) < fleetRetry {
				per[d.agent]++
			}
		}
		for agent, n := range per {
			if n > 1 {
				t.Errorf("agent %s called %d times within the %v cool-off recorded at %v", agent, n, fleetRetry, e.At.Format(time.RFC3339Nano))
			}
		}
	}
	if coolOffs == 0 {
		t.Fatalf("%d calls answered 429 but no cool-off was recorded", limited)
	}
	if peak > fleetMax {
		t.Errorf("%d calls in flight at the fake; max_concurrency %d", peak, fleetMax)
	}
	// AIMD: each signal halved the limit in force. Right after one, no
	// new call was granted yet (the cool-off), so at most the calls in
	// flight (one per process) can have added to it: one slot per
	// fleetEvery successes.
	close(afterSignal)
	bound := fleetMax/2 + (goAgents+shellAgents+fleetEvery-1)/fleetEvery
	var signals []int
	for v := range afterSignal {
		signals = append(signals, v)
		if v < 1 || v > bound {
			t.Errorf("the adaptive limit right after a signal was %d; want 1 to %d (halved from at most %d)", v, bound, fleetMax)
		}
	}
	if len(signals) == 0 {
		t.Error("no agent saw a signal")
	}
	t.Logf("%d calls, %d answered 429, peak %d in flight, adaptive limit after each signal %v", len(got), limited, peak, signals)

	// The fake takes more now: successes raise the limit back.
	fake.mu.Lock()
	fake.capacity = fleetMax
	fake.mu.Unlock()
	c := exec.Command(self, "-test.run=^$")
	c.Env = append(cleanEnv(), fmt.Sprintf("%s=%s %s recover %d", fleetAgentEnv, s.URL(), srv.URL, 4*fleetMax*fleetEvery))
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("recovery agent: %v\n%s", err, out)
	}
	if st := tg.status(t, g, "provider:fake"); st.Adaptive == nil || st.Adaptive.Limit != fleetMax || st.Limit != fleetMax {
		t.Errorf("after %d successes: adaptive %+v, limit %d; want back at %d", 4*fleetMax*fleetEvery, st.Adaptive, st.Limit, fleetMax)
	}
}
