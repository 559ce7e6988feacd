package main

import (
	"github.com/governor-dev/governor/internal/exitcode"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// pipelineStore is a file-backend store with cfg as its configuration.
func pipelineStore(t *testing.T, cfg string) []string {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "exec-defaults.yaml")
	if err := os.WriteFile(file, []byte("project: clitest\n"+cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"--backend", "file", "--dir", filepath.Join(dir, "state"), "--config", file}
}

// Issue 25 point 1: --fair-key on a resource without fairness was
// served FIFO silently; it is refused (125) naming the resource and how
// to configure fairness. With fairness configured it is accepted.
func TestRunFairKeyWithoutFairnessRefused(t *testing.T) {
	g := pipelineStore(t, "resources:\n  fair: {limit: 1, fair: true}\n")
	for _, args := range [][]string{
		{"run", "--resource", "fz", "--limit", "1", "--fair-key", "A", "--", "true"},
		{"acquire", "fz", "--limit", "1", "--fair-key", "A"},
	} {
		code, _, errs := cli(t, append(g, args...)...)
		if code != exitcode.Failure || !strings.Contains(errs, `--fair-key "A": fz has no fairness`) || !strings.Contains(errs, "resources.fz.fair: true") {
			t.Errorf("%s --fair-key on a FIFO resource: exit %d, %s; want 125 naming fz and resources.fz.fair", args[0], code, errs)
		}
	}
	if code, _, errs := cli(t, append(g, "run", "--resource", "fair", "--fair-key", "A", "--", "true")...); code != 0 {
		t.Errorf("run --fair-key on a fair resource: exit %d, %s", code, errs)
	}
	code, _, errs := cli(t, append(g, "run", "--resource", "fz", "--limit", "1", "--priority", "high", "--", "true")...)
	if code != exitcode.Failure || !strings.Contains(errs, "resources.fz.priorities") {
		t.Errorf("run --priority on a resource without classes: exit %d, %s; want 125 naming resources.fz.priorities", code, errs)
	}
}

// Issue 25 point 6: a nested run asking for a resource earlier in the
// lock order than one its ancestor holds (GOVERNOR_HELD) could deadlock
// silently; it is refused at once (125) naming the order. Later in the
// order, it runs.
func TestRunNestedAgainstTheLockOrderRefused(t *testing.T) {
	g := pipelineStore(t, "")
	handle := acquireHandle(t, g, "b", "--limit", "1", "--ttl", "1m")
	t.Setenv("GOVERNOR_HELD", "clitest/b="+strings.TrimPrefix(handle, "b@"))
	start := time.Now()
	code, _, errs := cli(t, append(g, "run", "--resource", "a", "--limit", "1", "--if-busy", "wait", "--wait-timeout", "1m", "--", "true")...)
	if code != exitcode.Failure || !strings.Contains(errs, "a comes before b in the lock order") || !strings.Contains(errs, "GOVERNOR_HELD") {
		t.Fatalf("nested run for a under b: exit %d, %s; want 125 naming the lock order", code, errs)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("refused after %v: it waited", d)
	}
	if code, _, errs := cli(t, append(g, "run", "--resource", "c", "--limit", "1", "--", "true")...); code != 0 {
		t.Fatalf("nested run for c under b: exit %d, %s", code, errs)
	}
}

// The one limit rule (issue 23): takeover asks the configured limit,
// not --limit, as run and acquire do (it let --limit win, against its
// own help). The taken slot of an expired lease is stored under it.
func TestTakeoverConfiguredLimitWinsOverFlag(t *testing.T) {
	g := pipelineStore(t, "resources:\n  r: {limit: 1}\n")
	id := strings.TrimPrefix(strings.SplitN(acquireHandle(t, g, "r", "--ttl", "100ms"), ".", 2)[0], "r@")
	deadline := time.Now().Add(30 * time.Second)
	var code int
	var out, errs string
	for {
		code, out, errs = cli(t, append(g, "takeover", "r", "--lease", id, "--limit", "3", "--ttl", "1m")...)
		if code == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond) // until the lease has expired
	}
	if code != 0 {
		t.Fatalf("takeover of the expired lease: exit %d, %s %s", code, out, errs)
	}
	if code, out, errs := cli(t, append(g, "slots", "r", "--json")...); code != 0 || !strings.Contains(out, `"limit": 1,`) {
		t.Fatalf("slots after the takeover: exit %d, %s %s; want limit 1 (configured), not 3 (--limit)", code, out, errs)
	}
	if code, out, errs := cli(t, append(g, "events", "r")...); code != 0 || strings.Contains(out, "limit 3") {
		t.Fatalf("events after the takeover: exit %d, %s %s; want no drift to --limit 3", code, out, errs)
	}
}

// The limit note states the limit in force as the backend serves it
// (internal/acquire's inForce): a provider's adaptive limit, halved by a
// rate-limit signal, is in force for a process asking its maximum, and
// the note says so (it said nothing: NoteLimit had no adaptive branch).
func TestLimitNoteStatesTheAdaptiveLimit(t *testing.T) {
	g := pipelineStore(t, "providers:\n  p: {max_concurrency: 4, adaptive: true}\n")
	if code, _, errs := cli(t, append(g, "backoff", "p", "--retry-after", "1ms")...); code != 0 {
		t.Fatalf("backoff: exit %d, %s", code, errs)
	}
	code, _, errs := cli(t, append(g, "acquire", "provider:p", "--limit", "4", "--ttl", "1m", "--if-busy", "wait", "--wait-timeout", "1m")...)
	want := "provider:p: --limit 4 is not applied: the limit in force is 2, from adaptive concurrency"
	if code != 0 || !strings.Contains(errs, want) {
		t.Fatalf("acquire --limit 4 under an adaptive limit 2: exit %d, stderr %q; want %q", code, errs, want)
	}
}
