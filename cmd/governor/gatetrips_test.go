package main

import (
	"bufio"
	"encoding/json"
	"io"
	"math"
	"os"
	"testing"

	"github.com/alicebob/miniredis/v2"

	"github.com/governor-dev/governor/internal/redistest"
)

// bridgeConn is a `governor bridge` run in this process (Main) with the
// global flags it was started with, spoken to over pipes.
type bridgeConn struct {
	t     *testing.T
	in    *io.PipeWriter
	out   *io.PipeReader
	lines *bufio.Scanner
	done  chan int
	id    int
}

// startBridge starts a bridge with the global flags g and says hello;
// the test's end closes it.
func startBridge(t *testing.T, g []string) *bridgeConn {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	b := &bridgeConn{t: t, in: inW, out: outR, lines: bufio.NewScanner(outR), done: make(chan int, 1)}
	go func() {
		b.done <- Main(append(g, "bridge"), inR, outW, io.Discard)
		outW.Close()
	}()
	t.Cleanup(func() { b.close() })
	b.call("hello", map[string]any{"protocol": 1, "client": "test", "pid": os.Getpid()})
	return b
}

// send sends op and returns its reply's result, or its error object.
func (b *bridgeConn) send(op string, args any) (result, errObj json.RawMessage) {
	b.t.Helper()
	b.id++
	m, _ := json.Marshal(map[string]any{"id": b.id, "op": op, "args": args})
	if _, err := b.in.Write(append(m, '\n')); err != nil {
		b.t.Fatal(err)
	}
	for b.lines.Scan() {
		var r struct {
			ID     int             `json:"id"`
			OK     bool            `json:"ok"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(b.lines.Bytes(), &r); err != nil {
			b.t.Fatalf("bridge wrote %q: %v", b.lines.Text(), err)
		}
		if r.ID != b.id {
			continue // an event
		}
		if !r.OK {
			return nil, r.Error
		}
		return r.Result, nil
	}
	b.t.Fatalf("%s: the bridge ended its output: %v", op, b.lines.Err())
	return nil, nil
}

// call is send, failing the test on an error reply.
func (b *bridgeConn) call(op string, args any) json.RawMessage {
	b.t.Helper()
	res, e := b.send(op, args)
	if e != nil {
		b.t.Fatalf("%s: %s", op, e)
	}
	return res
}

// close ends the bridge's input and waits for it to exit 0 (once).
func (b *bridgeConn) close() {
	if b.in == nil {
		return
	}
	b.in.Close()
	b.in = nil
	go io.Copy(io.Discard, b.out)
	if code := <-b.done; code != 0 {
		b.t.Errorf("bridge: exit %d", code)
	}
}

// TestGateRoundTrips counts the script round trips a client's provider
// gate makes on Redis through the bridge, with and without a spend
// budget: provider_acquire, then provider_report (used tokens, and the
// cost with a budget) and release as two requests (a client from before
// provider_report's release), or as one (release: true), which sends the
// settle with the slot's release. The budget adds one round trip to the
// one-request gate (the reserve), two to the two-request one (the
// reserve, and the settle alone). A provider with rate limits only (no
// slot: openai, requests; gemini, tokens) reserves the budget with its
// rate (RateRequest.Budget) and settles it alone: one more too. On Redis
// and miniredis, through a TCP proxy. The fewest over a few rounds of
// each is compared: a heartbeat now and then only adds.
//
//	go test -run TestGateRoundTrips -v ./cmd/governor/
func TestGateRoundTrips(t *testing.T) {
	t.Parallel()
	t.Run("redis", func(t *testing.T) { gateRoundTrips(t, redistest.Start(t).Addr) })
	t.Run("miniredis", func(t *testing.T) { gateRoundTrips(t, miniredis.RunT(t).Addr()) })
}

// gateRoundTrips counts TestGateRoundTrips' round trips on the Redis
// server at addr.
func gateRoundTrips(t *testing.T, addr string) {
	p := startTurnProxy(t, addr)
	tg := &target{name: "redis", redisURL: "redis://" + p.ln.Addr().String() + "/0",
		config: configFile(t, "project: gate\nproviders:\n  anthropic: {max_concurrency: 2}\n  openai: {requests_per_minute: 6000}\n  gemini: {tokens_per_minute: 100000000}\n")}
	b := startBridge(t, tg.global())
	budget := map[string]any{"name": "day", "limit": 1000, "unit": "USD", "per": "24h"}
	gate := func(provider string, budgets, oneRequest bool) {
		acq := map[string]any{"provider": provider, "tokens": 100}
		report := map[string]any{"outcome": "ok", "used_tokens": 80}
		if budgets {
			acq["budgets"], acq["estimate"] = []any{budget}, 0.3
			report["cost"] = 0.2
		}
		var l struct {
			Lease string `json:"lease"`
		}
		if err := json.Unmarshal(b.call("provider_acquire", acq), &l); err != nil {
			t.Fatal(err)
		}
		report["lease"] = l.Lease
		if oneRequest {
			report["release"] = true
		}
		var r struct {
			Settled *bool `json:"settled"`
		}
		if err := json.Unmarshal(b.call("provider_report", report), &r); err != nil {
			t.Fatal(err)
		}
		if budgets != (r.Settled != nil && *r.Settled) {
			t.Fatalf("provider_report %v: settled %v", report, r.Settled)
		}
		if !oneRequest {
			b.call("release", map[string]any{"lease": l.Lease})
		}
	}
	type shape struct {
		name, provider      string
		budgets, oneRequest bool
	}
	// openai has rate limits only: no slot for the settle to go with.
	shapes := []shape{{"report, release", "anthropic", false, false}, {"budget: report, release", "anthropic", true, false},
		{"report+release", "anthropic", false, true}, {"budget: report+release", "anthropic", true, true},
		{"rates only: report+release", "openai", false, true}, {"rates only: budget: report+release", "openai", true, true},
		{"tokens only: report+release", "gemini", false, true}, {"tokens only: budget: report+release", "gemini", true, true}}
	fewest := map[string]int{}
	for round := range 4 {
		for _, sh := range shapes {
			p.take()
			gate(sh.provider, sh.budgets, sh.oneRequest)
			n := p.take()
			if round == 0 {
				continue // scripts loaded (EVALSHA, then EVAL)
			}
			if f, ok := fewest[sh.name]; !ok || n < f {
				fewest[sh.name] = n
			}
		}
	}
	t.Logf("script round trips of a gated call, fewest of 3: %v", fewest)
	if got := fewest["budget: report+release"] - fewest["report+release"]; got != 1 {
		t.Errorf("a budget adds %d round trips to a gated call reporting with its release (%v); want 1", got, fewest)
	}
	if got := fewest["budget: report, release"] - fewest["report, release"]; got != 2 {
		t.Errorf("a budget adds %d round trips to a gated call reporting, then releasing (%v); want 2: the reserve, the settle alone", got, fewest)
	}
	for _, only := range []string{"rates only", "tokens only"} {
		if got := fewest[only+": budget: report+release"] - fewest[only+": report+release"]; got != 1 {
			t.Errorf("a budget adds %d round trips to a gated call of a provider with %s (%v); want 1: the settle alone", got, only, fewest)
		}
	}
	if fewest["report+release"] != fewest["report, release"] {
		t.Errorf("without a budget, the report's release changes the round trips (%v); want the same", fewest)
	}
	// What the budget holds: every call settled at its cost, 0.2 (none at
	// its estimate, 0.3), nothing left reserved.
	_, e := b.send("provider_acquire", map[string]any{"provider": "anthropic", "if_busy": "fail", "budgets": []any{budget}, "estimate": 999.99})
	var refused struct {
		Budget struct {
			Spent, Reserved float64
		} `json:"budget"`
	}
	if err := json.Unmarshal(e, &refused); err != nil || e == nil {
		t.Fatalf("a call that does not fit: %s (%v); want refused", e, err)
	}
	if want := 16 * 0.2; math.Abs(refused.Budget.Spent-want) > 1e-9 || refused.Budget.Reserved != 0 {
		t.Errorf("budget after 16 budgeted calls at cost 0.2: %s; want spent %v, reserved 0", e, want)
	}
}
