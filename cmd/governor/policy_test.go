package main

import (
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
	if code != ExitFailure || !strings.Contains(errs, `priority "urgent" for gpu; allowed: critical, batch`) {
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
	if code != ExitBusy || !strings.Contains(errs, "max_queue 1") {
		t.Fatalf("third acquire: exit %d, %s; want 73 naming max_queue 1", code, errs)
	}
	if waited := time.Since(start); waited > 15*time.Second {
		t.Fatalf("refused after %v: it waited instead of being refused at once", waited)
	}
	if code := <-done; code != ExitBusy {
		t.Fatalf("the waiter: exit %d, want 73 after its --wait-timeout", code)
	}
}

// governor run --supersede: a newer run with the key replaces the
// waiting one (exit 76); with --cancel-in-progress it also stops the
// running one as on lease loss (exit 122), then runs itself.
func TestRunSupersede(t *testing.T) {
	runTargets(t, "", func(t *testing.T, tg *target) {
		g := tg.governor(t)
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
		running := run("--supersede", "deploy", "--", "sleep", "60")
		eventually(t, 30*time.Second, "the first run holds heavy", func() bool {
			st := tg.status(t, g, "heavy")
			return len(st.Holders) == 1 && st.Holders[0].CommandPID() != 0
		})
		waiting := run("--supersede", "deploy", "--if-busy", "wait", "--", "true")
		eventually(t, 30*time.Second, "the second run waits", func() bool { return len(tg.status(t, g, "heavy").Waiters) == 1 })
		latest := run("--supersede", "deploy", "--cancel-in-progress", "--if-busy", "wait", "--", "echo", "latest ran")
		r := <-waiting
		if r.code != ExitSuperseded || !strings.Contains(r.errs, "superseded") {
			t.Fatalf("the waiting run: exit %d, %s; want 76 saying it was superseded", r.code, r.errs)
		}
		r = <-running
		if r.code != ExitLeaseLost || !strings.Contains(r.errs, "cancelled in progress") {
			t.Fatalf("the running run: exit %d, %s; want 122 saying it was cancelled in progress", r.code, r.errs)
		}
		r = <-latest
		if r.code != 0 || !strings.Contains(r.out, "latest ran") {
			t.Fatalf("the latest run: exit %d, %q %s; want it to run", r.code, r.out, r.errs)
		}
	})
}
