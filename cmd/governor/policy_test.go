package main

import (
	"github.com/governor-dev/governor/internal/exitcode"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Queue policies from the CLI: the configured policy reaches the
// backend, --priority and --fair-key are checked against it, and
// max_queue refuses at once with exit 73 naming the bound.
func TestAcquireQueuePolicy(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "exec-defaults.yaml")
	if err := os.WriteFile(cfg, []byte(`project: clitest
resources:
  gpu: {limit: 1, priorities: [critical, batch], max_queue: 1, max_wait: 1m}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	g := []string{"--backend", "file", "--dir", filepath.Join(dir, "state"), "--config", cfg}
	if code, _, errs := cli(t, append(g, "acquire", "gpu", "--ttl", "1m", "--priority", "critical")...); code != 0 {
		t.Fatalf("acquire: exit %d, %s", code, errs)
	}
	code, _, errs := cli(t, append(g, "acquire", "gpu", "--priority", "urgent")...)
	if code != exitcode.Failure || !strings.Contains(errs, `priority "urgent" for gpu; allowed: critical, batch`) {
		t.Fatalf("acquire --priority urgent: exit %d, %s; want 125 naming the classes", code, errs)
	}
	// One waiter fills the queue; the next is refused at once.
	done := make(chan int, 1)
	go func() {
		code, _, _ := cli(t, append(g, "acquire", "gpu", "--if-busy", "wait", "--wait-timeout", "5s", "--priority", "batch")...)
		done <- code
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, out, _ := cli(t, append(g, "slots", "gpu", "--json")...)
		if code == 0 && strings.Contains(out, `"priority": "batch"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the waiter never showed in slots: %s", out)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code, out, _ := cli(t, append(g, "slots", "gpu")...); code != 0 || !strings.Contains(out, "classes critical 1, batch 0") ||
		!strings.Contains(out, "CLASS") || !strings.Contains(out, "batch") {
		t.Fatalf("slots does not show the classes and the waiter's class: %s", out)
	}
	start := time.Now()
	code, _, errs = cli(t, append(g, "acquire", "gpu", "--if-busy", "wait", "--wait-timeout", "20s")...)
	if code != exitcode.Busy || !strings.Contains(errs, "max_queue 1") {
		t.Fatalf("third acquire: exit %d, %s; want 73 naming max_queue 1", code, errs)
	}
	if waited := time.Since(start); waited > 15*time.Second {
		t.Fatalf("refused after %v: it waited instead of being refused at once", waited)
	}
	if code := <-done; code != exitcode.Busy {
		t.Fatalf("the waiter: exit %d, want 73 after its --wait-timeout", code)
	}
}

// governor run --supersede: a newer run with the key replaces the
// waiting one (exit 76); with --cancel-in-progress it also stops the
// running one as on lease loss (exit 122), and runs itself only once
// that one's command has ended: the two commands never overlap (each
// leaves a file at its start and end; the old one takes a second to
// end after its TERM).
func TestRunSupersede(t *testing.T) {
	t.Parallel()
	runTargets(t, "", func(t *testing.T, tg *target) {
		g := tg.governor(t)
		dir := t.TempDir()
		type result struct {
			code      int
			out, errs string
		}
		run := func(args ...string) chan result {
			ch := make(chan result, 1)
			go func() {
				code, out, errs := tg.run(t, append([]string{"run", "--resource", "heavy"}, args...)...)
				ch <- result{code, out, errs}
			}()
			return ch
		}
		running := run("--supersede", "deploy", "--", "sh", "-c",
			`touch "$0/old-start"; trap 'sleep 1; touch "$0/old-end"; exit 0' TERM; while :; do sleep 0.1; done`, dir)
		eventually(t, 30*time.Second, "the first run holds heavy", func() bool {
			st := tg.status(t, g, "heavy")
			_, err := os.Stat(filepath.Join(dir, "old-start"))
			return len(st.Holders) == 1 && st.Holders[0].CommandPID() != 0 && err == nil
		})
		waiting := run("--supersede", "deploy", "--if-busy", "wait", "--", "true")
		eventually(t, 30*time.Second, "the second run waits", func() bool { return len(tg.status(t, g, "heavy").Waiters) == 1 })
		latest := run("--supersede", "deploy", "--cancel-in-progress", "--if-busy", "wait", "--", "sh", "-c",
			`if [ -e "$0/old-end" ]; then echo "latest ran after the old one ended"; else echo "latest ran beside the old one"; fi`, dir)
		r := <-waiting
		if r.code != exitcode.Superseded || !strings.Contains(r.errs, "superseded") {
			t.Fatalf("the waiting run: exit %d, %s; want 76 saying it was superseded", r.code, r.errs)
		}
		r = <-running
		if r.code != exitcode.LeaseLost || !strings.Contains(r.errs, "cancelled in progress") {
			t.Fatalf("the running run: exit %d, %s; want 122 saying it was cancelled in progress", r.code, r.errs)
		}
		r = <-latest
		if r.code != 0 || !strings.Contains(r.out, "latest ran after the old one ended") {
			t.Fatalf("the latest run: exit %d, %q %s; want it to run after the old one ended", r.code, r.out, r.errs)
		}
	})
}
