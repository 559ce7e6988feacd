package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/governor-dev/governor/internal/runner/recordtest"
)

// TestBackoff: 'governor backoff P' pauses P for every process: a run
// --provider P with --if-busy fail exits 73 saying until when (a
// provider with slots, and a rates-only one), a waiting run starts once
// the cool-off is over; bad input is 125.
func TestBackoff(t *testing.T) {
	t.Parallel()
	cfg := "providers:\n  anthropic:\n    max_concurrency: 2\n  openai:\n    requests_per_minute: 600\n"
	runTargets(t, cfg, func(t *testing.T, tg *target) {
		g := tg.governor(t)
		for _, p := range []string{"anthropic", "openai"} {
			// The refusals are checked while the cool-off is known to be in
			// force: a command that ran after its end proves nothing, and
			// the round is tried again with a new cool-off (a loaded
			// machine can take seconds per process start).
			var end time.Time
			for round := 1; ; round++ {
				code, out, errs := tg.run(t, "backoff", p, "--retry-after", "3s")
				if code != 0 || !strings.Contains(out, "provider "+p+": cooling off after a rate-limit signal until ") {
					t.Fatalf("backoff %s: exit %d %q %q", p, code, out, errs)
				}
				end = tg.status(t, g, "provider:"+p).CoolOff
				if end.IsZero() {
					t.Fatalf("backoff %s: the status shows no cool-off", p)
				}
				if refusedDuringCoolOff(t, tg, p, end) || round == 5 {
					break
				}
			}
			// A waiting run is granted at or after the cool-off's end (its
			// record's grant time; both clocks are this machine's).
			rec := filepath.Join(t.TempDir(), "runs.jsonl")
			if code, _, errs := tg.run(t, "run", "--provider", p, "--if-busy", "wait", "--wait-timeout", "60s", "--record", rec, "--", "true"); code != 0 {
				t.Fatalf("waiting run --provider %s: exit %d %q", p, code, errs)
			}
			if r := recordtest.Ends(t, rec); len(r) != 1 || r[0].Granted.Before(end) {
				t.Fatalf("waiting run --provider %s: records %+v; want one granted at or after the cool-off's end %v", p, r, end)
			}
		}
		for _, bad := range [][]string{{"backoff", "anthropic", "--retry-after", "-1s"}, {"backoff", "anthropic", "--retry-after", "25h"},
			{"backoff", ""}, {"backoff"}, {"run", "--provider", "anthropic", "--backoff-exit-code", "256", "--", "true"},
			{"run", "--resource", "heavy", "--backoff-exit-code", "3", "--", "true"}} {
			if code, _, errs := tg.run(t, bad...); code != 125 {
				t.Errorf("%q: exit %d %q; want 125", bad, code, errs)
			}
		}
	})
}

// refusedDuringCoolOff runs 'run --provider p' (and, for a provider with
// slots, 'acquire provider:p') during p's cool-off, which ends at end. It
// fails t if one is not refused (exit 73 saying until when) although it
// ended before end; it returns false, inconclusive, if one ran after end.
func refusedDuringCoolOff(t *testing.T, tg *target, p string, end time.Time) bool {
	t.Helper()
	cmds := [][]string{{"run", "--provider", p, "--", "true"}}
	if p == "anthropic" {
		cmds = append(cmds, []string{"acquire", "provider:" + p})
	}
	for _, args := range cmds {
		code, _, errs := tg.run(t, args...)
		if code == 73 && strings.Contains(errs, "cooling off after a rate-limit signal until ") {
			continue
		}
		if time.Now().After(end) {
			t.Logf("%q ended after the cool-off (exit %d): tried again", args, code)
			return false
		}
		t.Fatalf("%q during the cool-off: exit %d %q; want 73 saying until when", args, code, errs)
	}
	return true
}

// TestRunBackoffExitCode: a command exiting with --backoff-exit-code N
// is a rate-limit signal for its providers: the run exits N, says so,
// and the next run of the provider is refused for the cool-off; any
// other exit code signals nothing.
func TestRunBackoffExitCode(t *testing.T) {
	t.Parallel()
	cfg := "providers:\n  anthropic:\n    max_concurrency: 2\n"
	runTargets(t, cfg, func(t *testing.T, tg *target) {
		if code, _, errs := tg.run(t, "run", "--provider", "anthropic", "--backoff-exit-code", "42", "--", "sh", "-c", "exit 1"); code != 1 || errs != "" {
			t.Fatalf("exit 1: run exit %d %q", code, errs)
		}
		if code, _, errs := tg.run(t, "run", "--provider", "anthropic", "--", "true"); code != 0 {
			t.Fatalf("after an exit code that is no signal: exit %d %q", code, errs)
		}
		code, _, errs := tg.run(t, "run", "--provider", "anthropic", "--backoff-exit-code", "42", "--", "sh", "-c", "exit 42")
		if code != 42 || !strings.Contains(errs, "provider anthropic: the command exited 42 (--backoff-exit-code): cooling off") {
			t.Fatalf("exit 42: run exit %d %q; want 42 and the cool-off said", code, errs)
		}
		if code, _, errs := tg.run(t, "run", "--provider", "anthropic", "--", "true"); code != 73 || !strings.Contains(errs, "cooling off") {
			t.Fatalf("after the signal: exit %d %q; want 73 cooling off", code, errs)
		}
		if code, out, _ := tg.run(t, "events", "provider:anthropic"); code != 0 || !strings.Contains(out, "cooloff") || !strings.Contains(out, "--backoff-exit-code") {
			t.Fatalf("events: exit %d %q; want the cool-off and its reason", code, out)
		}
	})
}

// TestRunAdaptive: with providers.P.adaptive, a signal (exit code
// --backoff-exit-code) halves P's limit in force for every process, and
// a run of successful runs adds one back; slots shows the adaptive limit
// against the configured one and the last signal; bad adaptive settings
// are named by config check.
func TestRunAdaptive(t *testing.T) {
	t.Parallel()
	cfg := "providers:\n  anthropic:\n    max_concurrency: 4\n    adaptive: true\n    adaptive_min: 1\n    adaptive_increase_every: 2\n"
	runTargets(t, cfg, func(t *testing.T, tg *target) {
		if code, _, errs := tg.run(t, "run", "--provider", "anthropic", "--backoff-exit-code", "42", "--", "sh", "-c", "exit 42"); code != 42 {
			t.Fatalf("signal: exit %d %q", code, errs)
		}
		g := tg.governor(t)
		if st := tg.status(t, g, "provider:anthropic"); st.Limit != 2 || st.Adaptive == nil || st.Adaptive.Max != 4 || st.LastSignal.IsZero() {
			t.Fatalf("after a signal: limit %d, adaptive %+v, last signal %v; want 2 of 4", st.Limit, st.Adaptive, st.LastSignal)
		}
		code, out, _ := tg.run(t, "slots", "provider:anthropic")
		if code != 0 || !strings.Contains(out, "adaptive: limit 2 of configured 4") || !strings.Contains(out, "last rate-limit signal") {
			t.Fatalf("slots: exit %d\n%s", code, out)
		}
		for i := 0; i < 2; i++ {
			if code, _, errs := tg.run(t, "run", "--provider", "anthropic", "--if-busy", "wait", "--wait-timeout", "60s", "--", "true"); code != 0 {
				t.Fatalf("success %d: exit %d %q", i, code, errs)
			}
		}
		if st := tg.status(t, g, "provider:anthropic"); st.Limit != 3 || st.Adaptive.Limit != 3 {
			t.Fatalf("after two successes: limit %d, adaptive %+v; want 3", st.Limit, st.Adaptive)
		}
	})
	bad := "providers:\n  a:\n    adaptive: true\n  b:\n    max_concurrency: 2\n    adaptive: true\n    adaptive_min: 3\n  c:\n    max_concurrency: 2\n    adaptive_increase_every: 5\n  d:\n    on_backend_down: sometimes\n"
	tg := fileTarget(t, bad)
	code, _, errs := tg.run(t, "config", "check")
	for _, want := range []string{"providers.a.adaptive", "max concurrency", "providers.b.adaptive", "adaptive min 3; allowed: 1 to the max concurrency 2",
		"providers.c.adaptive", "providers.c.adaptive is not true", "providers.d.on_backend_down", `on_backend_down "sometimes"; allowed: closed, open, local:N`} {
		if code != 125 || !strings.Contains(errs, want) {
			t.Errorf("config check: exit %d, %q does not name %q", code, errs, want)
		}
	}
}

// backoff of a provider neither configured nor in use is refused (issue
// 25.7): 125 naming the configured providers and the nearest one, and
// nothing created; --force cools it off anyway; a provider used ad hoc
// (it has state) is accepted.
func TestBackoffUnknownProvider(t *testing.T) {
	t.Parallel()
	cfg := "providers:\n  anthropic:\n    max_concurrency: 2\n  openai:\n    requests_per_minute: 600\n"
	runTargets(t, cfg, func(t *testing.T, tg *target) {
		code, _, errs := tg.run(t, "backoff", "antropic")
		if code != 125 || !strings.Contains(errs, `provider "antropic" is not configured`) || !strings.Contains(errs, "configured: anthropic, openai") ||
			!strings.Contains(errs, "did you mean anthropic?") || !strings.Contains(errs, "--force") {
			t.Errorf("backoff antropic: exit %d, stderr %s; want 125 naming the configured providers", code, errs)
		}
		if _, out, _ := tg.run(t, "--json", "slots"); strings.Contains(out, "provider:antropic") {
			t.Errorf("backoff antropic created provider:antropic:\n%s", out)
		}
		if code, _, errs := tg.run(t, "run", "--provider", "adhoc", "--limit", "2", "--", "true"); code != 0 {
			t.Fatalf("run --provider adhoc: exit %d, %s", code, errs)
		}
		for _, args := range [][]string{{"backoff", "adhoc"}, {"backoff", "antropic", "--force"}} {
			if code, out, errs := tg.run(t, args...); code != 0 || !strings.Contains(out, "cooling off") {
				t.Errorf("%q: exit %d, %q, %s; want the cool-off recorded", args, code, out, errs)
			}
		}
	})
}
