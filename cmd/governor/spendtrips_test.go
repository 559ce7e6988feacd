package main

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/alicebob/miniredis/v2"

	"github.com/governor-dev/governor/internal/redistest"
)

// turnProxy forwards TCP connections to a Redis server and counts, on
// every connection, the client's turns that carry a script call
// (EVALSHA, EVAL): a turn is what the client writes between two of the
// server's replies, so a pipeline is one turn and so is a command sent
// alone. Each turn is a round trip the client waited for.
type turnProxy struct {
	ln    net.Listener
	to    string
	mu    sync.Mutex
	turns int
}

func startTurnProxy(t *testing.T, to string) *turnProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &turnProxy{ln: ln, to: to}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	return p
}

func (p *turnProxy) serve(c net.Conn) {
	defer c.Close()
	s, err := net.Dial("tcp", p.to)
	if err != nil {
		return
	}
	defer s.Close()
	var mu sync.Mutex
	replied := true // the server spoke since the client last did (or nothing was said)
	go func() {
		buf := make([]byte, 1<<16)
		for {
			n, err := s.Read(buf)
			if n > 0 {
				mu.Lock()
				replied = true // before the client can see the reply
				mu.Unlock()
				if _, werr := c.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				_ = c.Close()
				return
			}
		}
	}()
	buf := make([]byte, 1<<16)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			mu.Lock()
			turn := replied
			replied = false
			mu.Unlock()
			if turn && bytes.Contains(bytes.ToLower(buf[:n]), []byte("eval")) {
				p.mu.Lock()
				p.turns++
				p.mu.Unlock()
			}
			if _, werr := s.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				_ = s.Close()
			}
			return
		}
	}
}

// take returns the turns counted since the last take.
func (p *turnProxy) take() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.turns
	p.turns = 0
	return n
}

// TestRunCostRoundTrips counts the script round trips 'governor run
// --provider' makes on Redis, and 'governor acquire' with its 'governor
// release', with and without --cost: the cost adds one, the reserve (the
// settle goes in the slot release's pipeline). A run of a provider with
// rate limits only (no slot) reserves the cost with its rate
// (RateRequest.Budget) and settles it alone: one more too.
// The fewest over a few runs of each is compared: something else a run
// may send now and then (a heartbeat) only adds.
//
//	go test -run TestRunCostRoundTrips -v ./cmd/governor/
func TestRunCostRoundTrips(t *testing.T) {
	t.Parallel()
	t.Run("redis", func(t *testing.T) { runCostRoundTrips(t, redistest.Start(t).Addr) })
	t.Run("miniredis", func(t *testing.T) { runCostRoundTrips(t, miniredis.RunT(t).Addr()) })
}

// runCostRoundTrips counts TestRunCostRoundTrips' round trips on the
// Redis server at addr.
func runCostRoundTrips(t *testing.T, addr string) {
	p := startTurnProxy(t, addr)
	tg := &target{bin: governorBin(t), name: "redis", redisURL: "redis://" + p.ln.Addr().String() + "/0", config: writeRunConfig(t, spendConfig)}
	// A shape is its commands, run in turn; a release finds the lease
	// its acquire printed in $GOVERNOR_LEASE.
	shapes := map[string][][]string{
		"run":                     {{"run", "--provider", "anthropic", "--", "true"}},
		"run --cost":              {{"run", "--provider", "anthropic", "--cost", "0.01", "--", "true"}},
		"acquire, release":        {{"acquire", "provider:anthropic"}, {"release"}},
		"acquire --cost, release": {{"acquire", "provider:anthropic", "--cost", "0.01"}, {"release"}},
		// openai has rate limits only: no slot.
		"rates only: run":        {{"run", "--provider", "openai", "--", "true"}},
		"rates only: run --cost": {{"run", "--provider", "openai", "--cost", "0.01", "--", "true"}},
	}
	order := []string{"run", "run --cost", "acquire, release", "acquire --cost, release", "rates only: run", "rates only: run --cost"}
	fewest := map[string]int{}
	for round := range 4 {
		for _, name := range order {
			p.take()
			handle := ""
			for _, args := range shapes[name] {
				c := tg.command(args...)
				c.Env = append(c.Env, "GOVERNOR_LEASE="+handle)
				code, out, stderr := execCode(t, c)
				if code != 0 {
					t.Fatalf("%s: %v: exit %d, %s", name, args, code, stderr)
				}
				if f := strings.Fields(out); args[0] == "acquire" && len(f) == 2 {
					handle = f[0]
				}
			}
			n := p.take()
			if round == 0 {
				continue // scripts loaded (EVALSHA, then EVAL)
			}
			if f, ok := fewest[name]; !ok || n < f {
				fewest[name] = n
			}
		}
	}
	t.Logf("script round trips, fewest of 3: %v", fewest)
	if got := fewest["run --cost"] - fewest["run"]; got != 1 {
		t.Errorf("--cost adds %d round trips to a run (%v); want 1", got, fewest)
	}
	if got := fewest["acquire --cost, release"] - fewest["acquire, release"]; got != 1 {
		t.Errorf("--cost adds %d round trips to an acquire and its release (%v); want 1", got, fewest)
	}
	if got := fewest["rates only: run --cost"] - fewest["rates only: run"]; got != 1 {
		t.Errorf("--cost adds %d round trips to a run of a provider with rate limits only (%v); want 1: the settle alone", got, fewest)
	}
}

// TestAcquireCost: 'governor acquire --cost' reserves under the lease's
// id once the slot is held; 'governor settle --cost' with the lease in
// $GOVERNOR_LEASE settles every budget it reserved; 'governor release'
// settles what is left at its estimate; a cost that does not fit exits
// 73 naming the budget and leaves the slot free.
func TestAcquireCost(t *testing.T) {
	t.Parallel()
	runTargets(t, spendConfig, func(t *testing.T, tg *target) {
		g := tg.governor(t)
		withLease := func(handle string, args ...string) (int, string, string) {
			c := tg.command(args...)
			c.Env = append(c.Env, "GOVERNOR_LEASE="+handle)
			return execCode(t, c)
		}
		acquireCost := func(cost string) string {
			t.Helper()
			code, out, stderr := tg.run(t, "acquire", "provider:anthropic", "--cost", cost)
			f := strings.Fields(out)
			if code != 0 || len(f) != 2 {
				t.Fatalf("acquire --cost %s: exit %d, %q, %q", cost, code, out, stderr)
			}
			return f[0]
		}
		h := acquireCost("0.5")
		if st := budgetState(t, g, "fleet-hour"); st.Reserved != 500_000 || st.Open != 1 {
			t.Fatalf("fleet-hour after acquire --cost 0.5: %+v", st)
		}
		if code, out, stderr := withLease(h, "settle", "--cost", "0.2"); code != 0 || !strings.Contains(out, "on every budget it reserved") {
			t.Fatalf("settle --cost 0.2 with $GOVERNOR_LEASE: exit %d, %q, %q", code, out, stderr)
		}
		if code, _, stderr := withLease(h, "release"); code != 0 {
			t.Fatalf("release: exit %d, %q", code, stderr)
		}
		if st := budgetState(t, g, "fleet-hour"); st.Spent != 200_000 || st.Reserved != 0 || st.Open != 0 {
			t.Fatalf("fleet-hour after a settle of 0.2 and the release: %+v", st)
		}
		// Released unsettled: at its estimate.
		h = acquireCost("0.3")
		if code, _, stderr := withLease(h, "release"); code != 0 {
			t.Fatalf("release: exit %d, %q", code, stderr)
		}
		if st := budgetState(t, g, "fleet-hour"); st.Spent != 500_000 || st.Reserved != 0 || st.Open != 0 {
			t.Fatalf("fleet-hour after a release unsettled: %+v", st)
		}
		code, _, stderr := tg.run(t, "acquire", "provider:anthropic", "--cost", "100")
		if code != 73 || !strings.Contains(stderr, "budget fleet-hour exhausted: spent 0.5 USD, reserved 0 USD, limit 100 USD, this call 100 USD") {
			t.Fatalf("acquire --cost 100 over the limit: exit %d, %q", code, stderr)
		}
		if st := tg.status(t, g, "provider:anthropic"); st.Used != 0 {
			t.Fatalf("provider:anthropic after a refused cost: %d in use", st.Used)
		}
	})
}
