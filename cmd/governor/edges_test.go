package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/governor-dev/governor/governor/proc"
	"github.com/governor-dev/governor/internal/runner/recordtest"
	"github.com/governor-dev/governor/internal/view"
)

// TestEventsSinceOneRule: 'governor events --since' takes what
// /api/v1/events?since= takes (TestServeAPI): a positive duration; a
// negative one is refused naming it, not read as "all".
func TestEventsSinceOneRule(t *testing.T) {
	g := fileGlobal(t, "project: edges\n")
	for _, bad := range []string{"-1h", "0s", "yesterday"} {
		code, out, errs := cli(t, append(g, "events", "--since", bad)...)
		if code != 125 || out != "" || !strings.Contains(errs, fmt.Sprintf("since=%q; allowed: a positive duration", bad)) {
			t.Errorf("events --since %s: exit %d %q %q; want 125 naming it", bad, code, out, errs)
		}
	}
	if code, _, errs := cli(t, append(g, "events", "--since", "1h")...); code != 0 {
		t.Errorf("events --since 1h: exit %d %q", code, errs)
	}
}

// TestTakeoverEventWithoutPid: a takeover by a command given no --pid
// says that no process was declared, not "pid 0".
func TestTakeoverEventWithoutPid(t *testing.T) {
	g := fileGlobal(t, "project: edges\n")
	id := strings.SplitN(strings.TrimPrefix(acquireHandle(t, g, "heavy", "--limit", "1", "--ttl", "1m"), "heavy@"), ".", 2)[0]
	if code, _, errs := cli(t, append(g, "takeover", "heavy", "--lease", id, "--force")...); code != 0 {
		t.Fatalf("takeover: exit %d %s", code, errs)
	}
	_, evs, _ := cli(t, append(g, "events", "heavy")...)
	if !strings.Contains(evs, "(no process declared on ") || strings.Contains(evs, "pid 0") {
		t.Errorf("events after a takeover without --pid:\n%s\nwant (no process declared on HOST), no pid 0", evs)
	}
}

// TestPidOneNamesNoSession: --pid 1 (init, shared by every process of
// its PID namespace) does not make the default session HOST:1.
func TestPidOneNamesNoSession(t *testing.T) {
	g := fileGlobal(t, "project: edges\n")
	if code, _, errs := cli(t, append(g, "acquire", "heavy", "--limit", "1", "--ttl", "1m", "--pid", "1")...); code != 0 {
		t.Fatalf("acquire --pid 1: exit %d %s", code, errs)
	}
	_, out, _ := cli(t, append(g, "slots", "heavy", "--json")...)
	var s view.Slots
	if err := json.Unmarshal([]byte(out), &s); err != nil || len(s.Resources) != 1 || len(s.Resources[0].Holders) != 1 {
		t.Fatalf("slots --json: %v %s", err, out)
	}
	if h := s.Resources[0].Holders[0]; h.Session == proc.Current().Host+":1" || h.Session == "" {
		t.Errorf("acquire --pid 1: session %q; want one not named by pid 1", h.Session)
	}
}

// TestBackoffSaysSeconds: backoff says until when in whole seconds, not
// nanoseconds.
func TestBackoffSaysSeconds(t *testing.T) {
	g := fileGlobal(t, "providers:\n  anthropic:\n    max_concurrency: 2\n")
	code, out, errs := cli(t, append(g, "backoff", "anthropic", "--retry-after", "90s")...)
	want := regexp.MustCompile(`^provider anthropic: cooling off after a rate-limit signal until \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \(1m(29|30)s from now\)\n$`)
	if code != 0 || !want.MatchString(out) {
		t.Errorf("backoff: exit %d %q %q; want %s", code, out, errs, want)
	}
}

// TestUnreachableRedisSaysGovernorOnce: a wrapped library error does not
// repeat the "governor: " prefix.
func TestUnreachableRedisSaysGovernorOnce(t *testing.T) {
	for _, args := range [][]string{{"slots"}, {"slots", "--json"}} {
		code, _, errs := cli(t, append([]string{"--backend", "redis", "--redis-url", "redis://127.0.0.1:1", "--config", emptyConfig(t)}, args...)...)
		if code != 125 || !strings.Contains(errs, "cannot reach Redis") || strings.Count(errs, "governor: ") > 1 {
			t.Errorf("%v on an unreachable Redis: exit %d %q; want 125, governor: once", args, code, errs)
		}
	}
}

// TestProviderPriority: a provider's queue policy under providers.P
// (issue 25.13) gives run --provider P --priority its classes.
func TestProviderPriority(t *testing.T) {
	g := fileGlobal(t, "project: edges\nproviders:\n  anthropic:\n    max_concurrency: 2\n    priorities: [critical, default, batch]\n    reserve: [critical=1]\n")
	if code, out, errs := cli(t, append(g, "run", "--provider", "anthropic", "--priority", "critical", "--", "true")...); code != 0 {
		t.Fatalf("run --provider anthropic --priority critical: exit %d %q %q", code, out, errs)
	}
	if _, out, _ := cli(t, append(g, "slots", "provider:anthropic")...); !strings.Contains(out, "policy {priorities: [critical, default, batch], reserve: [critical=1]}") {
		t.Errorf("slots provider:anthropic:\n%s\nwant its policy", out)
	}
}

// TestNestedExecRunRecordsWhatTheAncestorHolds: a plain run inside a
// --join run records the ancestor's join slot (its name, weight and
// lease) once, not a "run" it never held nor the weight of every join
// slot (issue 25.9).
func TestNestedExecRunRecordsWhatTheAncestorHolds(t *testing.T) {
	tg := fileTarget(t, "run:\n  max_concurrent_runs: 4\n")
	rec := filepath.Join(t.TempDir(), "runs.jsonl")
	inner := append(append([]string{tg.bin}, tg.global()...), "run", "--record", rec, "--", "true")
	if code, out, errs := tg.run(t, append([]string{"run", "--join", "--record", rec, "--"}, inner...)...); code != 0 {
		t.Fatalf("exit %d, stdout %q, stderr %s", code, out, errs)
	}
	recs := recordtest.Ends(t, rec)
	if len(recs) != 2 {
		t.Fatalf("%d records, want 2", len(recs))
	}
	in, outer := recs[0], recs[1]
	if len(outer.Resources) != 1 || outer.Resources[0].Name != "run:join" {
		t.Fatalf("outer %+v; want the join slot", outer.Resources)
	}
	want := outer.Resources[0]
	want.Nested = true
	if !in.Nested || len(in.Resources) != 1 || in.Resources[0] != want {
		t.Fatalf("inner %+v; want nested, one resource %+v", in.Resources, want)
	}
}

// TestStaleJoinLimit: after run.max_concurrent_runs goes down to 1, the
// run:join limit stored earlier is shown as stale, saying why, not as
// asked for (issue 25.9).
func TestStaleJoinLimit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	g4 := []string{"--backend", "file", "--dir", dir, "--config", writeRunConfig(t, "run:\n  max_concurrent_runs: 4\n")}
	if code, _, errs := cli(t, append(g4, "run", "--", "true")...); code != 0 {
		t.Fatalf("run: exit %d %s", code, errs)
	}
	g1 := []string{"--backend", "file", "--dir", dir, "--config", writeRunConfig(t, "run:\n  max_concurrent_runs: 1\n")}
	_, out, _ := cli(t, append(g1, "slots", "--json")...)
	var s view.Slots
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatal(err)
	}
	for _, r := range s.Resources {
		if r.Resource == "run:join" && (r.LimitSource != "stale" || !strings.Contains(r.NotConfigured, "run.max_concurrent_runs is 1")) {
			t.Errorf("slots --json run:join: %+v; want stale, saying why", r)
		}
	}
	_, out, _ = cli(t, append(g1, "config", "show")...)
	if !regexp.MustCompile(`(?m)^run:join +- +3 +stale: the limit last asked for; run.max_concurrent_runs is 1`).MatchString(out) {
		t.Errorf("config show:\n%s\nwant run:join stale", out)
	}
}
