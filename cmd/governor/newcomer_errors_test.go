package main

import (
	"strings"
	"testing"
)

// The errors a newcomer meets first say what to do: a mistyped flag
// names the flag meant, a duration without a unit how to write it,
// a Redis URL with --backend file both of them, an unreachable Redis what to check.
func TestNewcomerErrors(t *testing.T) {
	g := []string{"--backend", "file", "--dir", t.TempDir(), "--config", emptyConfig(t)}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{append(g, "run", "--resouce", "heavy", "--", "true"), []string{"unknown flag: --resouce", "did you mean --resource?"}},
		{append(g, "slots", "--watc"), []string{"did you mean --watch?"}},
		{append(g, "run", "--resource", "heavy", "--timeout", "5", "--", "true"), []string{"--timeout 5: a duration needs a unit: write 5s"}},
		{append(g, "acquire", "heavy", "--ttl", "30"), []string{"--ttl 30: a duration needs a unit: write 30s"}},
		{[]string{"--backend", "file", "--redis-url", "redis://127.0.0.1:1/0", "--config", emptyConfig(t), "slots"}, []string{"--redis-url with --backend file"}},
		{[]string{"--backend", "redis", "--redis-url", "redis://127.0.0.1:1/0", "--config", emptyConfig(t), "slots"},
			[]string{"cannot reach Redis at redis://127.0.0.1:1/0", "is redis-server running there", "'redis-cli -u redis://127.0.0.1:1/0 ping'", "--backend file"}},
	} {
		code, _, errs := cli(t, tc.args...)
		if code != 125 {
			t.Errorf("%q: exit %d, want 125; stderr %q", tc.args, code, errs)
		}
		for _, w := range tc.want {
			if !strings.Contains(errs, w) {
				t.Errorf("%q: stderr %q lacks %q", tc.args, errs, w)
			}
		}
	}
}

// slots with nothing held or waited for says so in one line; named, a
// resource is shown whole.
func TestSlotsNothingHeldIsOneLine(t *testing.T) {
	tg := fileTarget(t, "")
	code, out, errs := tg.run(t, "slots")
	if code != 0 || strings.Count(strings.TrimSpace(out), "\n") != 0 || !strings.Contains(out, "nothing held, nobody waiting") {
		t.Fatalf("slots with nothing held: exit %d %s:\n%s\nwant one line saying so", code, errs, out)
	}
	if code, out, _ := tg.run(t, "slots", "heavy"); code != 0 || !strings.Contains(out, "heavy  limit 1  in use 0") {
		t.Fatalf("slots heavy: %d\n%s", code, out)
	}
	lease := func() string {
		_, out, _ := tg.run(t, "acquire", "heavy")
		return strings.Fields(out)[0]
	}()
	if _, out, _ := tg.run(t, "slots"); !strings.Contains(out, "heavy  limit 1  in use 1") || !strings.Contains(out, "run  limit") {
		t.Fatalf("slots with heavy held:\n%s", out)
	}
	tg.run(t, "release", lease)
}

// The run lock's note: --limit on a run without --resource says once,
// in a newcomer's words, that it is not used, and nothing about
// run:join; a --limit that applies says nothing.
func TestRunLimitWithoutResourceNote(t *testing.T) {
	tg := fileTarget(t, "")
	code, _, errs := tg.run(t, "run", "--limit", "1", "--", "true")
	if code != 0 || strings.Contains(errs, "run:join") || !strings.Contains(errs, "--limit 1 is not used") || strings.Count(errs, "\n") != 1 {
		t.Fatalf("run --limit 1 without --resource: exit %d, stderr %q; want one note saying --limit is not used, none naming run:join", code, errs)
	}
	if code, _, errs := tg.run(t, "run", "--limit", "2", "--resource", "gpu", "--", "true"); code != 0 || errs != "" {
		t.Fatalf("run --limit 2 --resource gpu: exit %d, stderr %q; want nothing said", code, errs)
	}
}
