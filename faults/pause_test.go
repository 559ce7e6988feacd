package faults_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/redistest"
)

// killAtCleanup resumes (it may be paused) and kills c at cleanup.
func killAtCleanup(t *testing.T, c *exec.Cmd) {
	t.Cleanup(func() {
		if c.Process != nil {
			_ = c.Process.Signal(syscall.SIGCONT)
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	})
}

// startKilledAtCleanup starts c, killed at cleanup, and returns its
// stdout line by line and its stderr.
func startKilledAtCleanup(t *testing.T, c *exec.Cmd) (<-chan string, *bytes.Buffer) {
	t.Helper()
	var errb bytes.Buffer
	c.Stderr = &errb
	out := lines(t, c)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	killAtCleanup(t, c)
	// Registered after the kill, so it runs before it: kill and reap c
	// here, then its stderr can be read. A failed test shows what every
	// process it started said (a watchdog's messages among them).
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		_ = c.Process.Signal(syscall.SIGCONT)
		_ = c.Process.Kill()
		_ = c.Wait()
		t.Logf("stderr of %q:\n%s", c.Args, errb.String())
	})
	return out, &errb
}

// Scenario 1 (library): a holder process is paused with SIGSTOP past its
// TTL. The slot goes to the next waiter; once resumed, the old holder
// either sees its lease lost before its next fenced write, or that write
// is refused by the fenced store; its Done closes; its loss handling
// frees nothing of the new holder's.
func TestPausedHolder(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	project := uniq("pause")
	key := governor.Key{Project: project, Resource: "heavy"}
	f := newFence(t)
	direct := backend(t, client(t, s.Addr))

	a := helperCmd(t, "hold", "REDIS_ADDR="+s.Addr, "PROJECT="+project, "RES=heavy", "FENCE="+f.Path, "WHO=paused")
	out := lines(t, a)
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	killAtCleanup(t, a)
	var tokA int64
	var idA string
	if _, err := fmt.Sscanf(expectLine(t, out, "held", 60*time.Second), "held %d %s", &tokA, &idA); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "the holder's fenced writes", func() bool { return len(f.writes()) >= 3 })

	if err := a.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stoppedAt := time.Now()

	g := newGovernor(t, s.Addr, governor.Options{Project: project, TTL: 2 * time.Second, QueueTTL: time.Second, Session: "next"})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	lb, err := g.Acquire(ctx, "heavy", governor.AcquireOptions{Limit: 1, Mode: governor.Wait})
	if err != nil {
		t.Fatalf("the waiter behind a paused holder: %v", err)
	}
	grantedB := monoNow()
	// The paused holder renewed at most a heartbeat (TTL/3) before the
	// stop: its lease lives at least TTL - TTL/3 after it.
	if d := time.Since(stoppedAt); d < 2*time.Second-2*time.Second/3-100*time.Millisecond {
		t.Fatalf("the slot went to the next waiter %v after the holder was paused, before its TTL could pass", d)
	}
	if lb.Token() <= tokA {
		t.Fatalf("new token %d not above the paused holder's %d", lb.Token(), tokA)
	}
	st := status(t, direct, key)
	if holds(st, idA) || !holds(st, lb.ID()) || st.Counters.ReclaimedExpiry < 1 {
		t.Fatalf("after the expiry: holders %+v counters %+v", st.Holders, st.Counters)
	}
	// The new holder writes before the old one resumes.
	for range 3 {
		checked := monoNow()
		if lb.Err() != nil {
			t.Fatalf("new holder lost its lease: %v", lb.Err())
		}
		if ok, hi := f.write(lb.Token(), "next", checked); !ok {
			t.Fatalf("the new holder's write with token %d refused (highest %d)", lb.Token(), hi)
		}
	}

	if err := a.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	// Its next step is one of these two; and Done closes.
	var step string
	sawDone := false
	timer := time.NewTimer(20 * time.Second)
	defer timer.Stop()
	for step == "" || !sawDone {
		select {
		case l, ok := <-out:
			if !ok {
				t.Fatal("the resumed holder exited")
			}
			switch {
			case strings.HasPrefix(l, "stale-held"):
				t.Logf("resumed holder: %s (its lease read as held after the pause)", l)
			case l == "lost-seen", l == "refused":
				step = l
			case strings.HasPrefix(l, "done"):
				if !strings.Contains(l, governor.ErrLeaseLost.Error()) {
					t.Fatalf("resumed holder: %q, want lease lost", l)
				}
				sawDone = true
			}
		case <-timer.C:
			t.Fatalf("the resumed holder did not report its loss (step %q, done %v)", step, sawDone)
		}
	}
	t.Logf("resumed holder's next step: %s", step)

	for _, w := range f.writes() {
		if w.who == "paused" && w.accepted && w.at > grantedB {
			t.Fatalf("a write of the paused holder was accepted after the slot went to the next one")
		}
	}
	f.check(t)
	checkSpans(t, f.spans(), 1)

	// The old holder's loss handling (count lost, release by its own id)
	// leaves the new holder alone.
	eventually(t, 15*time.Second, "the loss counted", func() bool { return status(t, direct, key).Counters.Lost >= 1 })
	if st := status(t, direct, key); len(st.Holders) != 1 || !holds(st, lb.ID()) {
		t.Fatalf("after the old holder resumed: holders %+v", st.Holders)
	}
	if err := lb.Release(); err != nil {
		t.Fatalf("the new holder's release: %v (someone else released it?)", err)
	}
}

// runConfig writes an exec-defaults.yaml for project with extra YAML.
func runConfig(t *testing.T, project, extra string) string {
	p := filepath.Join(t.TempDir(), "exec-defaults.yaml")
	if err := os.WriteFile(p, []byte("project: "+project+"\n"+extra), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// cleanEnv is the test's environment without GOVERNOR_* variables.
func cleanEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOVERNOR_") && !strings.HasPrefix(kv, helperEnv+"=") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// Scenario 1 (governor run): governor itself is paused past its TTL
// while its command goes on writing with its token. Its watchdog, which
// is not paused, stops the command by the lease's local deadline; another
// run gets the slot after the TTL, and the old command never writes again
// (not even a write the fenced store would refuse); when governor
// resumes it finds the lease lost and exits 122.
func TestPausedGovernorRun(t *testing.T) {
	s := redistest.Start(t)
	bin := governorBin(t)
	project := uniq("pauserun")
	cfg := runConfig(t, project, "lease:\n  ttl: 2s\n  heartbeat: 500ms\n")
	f := newFence(t)
	direct := backend(t, client(t, s.Addr))
	key := governor.Key{Project: project, Resource: "heavy"}

	run := func(who, duration string, extra ...string) (*exec.Cmd, <-chan string, *bytes.Buffer) {
		args := []string{"--config", cfg, "--backend", "redis", "--redis-url", s.URL(), "run", "--resource", "heavy", "--limit", "1", "--kill-grace", "1s"}
		args = append(append(args, extra...), "--", os.Args[0])
		c := exec.Command(bin, args...)
		c.Env = cleanEnv(helperEnv+"=fencewriter", "FENCE="+f.Path, "WHO="+who, "DURATION="+duration)
		out, errb := startKilledAtCleanup(t, c)
		return c, out, errb
	}
	accepted := func(who string) (n int, lastAt int64) {
		for _, w := range f.writes() {
			if w.who == who && w.accepted {
				n++
				lastAt = w.at
			}
		}
		return n, lastAt
	}

	r1, out1, err1 := run("first", "2m")
	expectLine(t, out1, "token", 60*time.Second)
	eventually(t, 20*time.Second, "the first command's writes", func() bool { n, _ := accepted("first"); return n >= 3 })
	st := status(t, direct, key)
	if len(st.Holders) != 1 {
		t.Fatalf("holders %+v", st.Holders)
	}
	tok1 := st.Holders[0].Token

	if err := r1.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	r2, out2, err2 := run("second", "1s", "--if-busy", "wait", "--wait-timeout", "1m")
	expectLine(t, out2, "token", 60*time.Second)
	if err := r2.Wait(); err != nil {
		t.Fatalf("second run: %v\n%s", err, err2)
	}
	n2, _ := accepted("second")
	if n2 == 0 {
		t.Fatalf("the second run's writes were all refused")
	}
	_ = out1

	if err := r1.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	resumed := time.Now()
	done := make(chan error, 1)
	go func() { done <- r1.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 122 {
			t.Fatalf("resumed run: %v, want exit 122\n%s", err, err1)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the resumed run did not stop its command\n%s", err1)
	}
	if !strings.Contains(err1.String(), "lost") {
		t.Fatalf("resumed run's stderr does not say the lease was lost:\n%s", err1)
	}
	t.Logf("resumed run stopped its command %v after SIGCONT", time.Since(resumed).Round(time.Millisecond))

	var first, second []fenceWrite
	for _, w := range f.writes() {
		switch w.who {
		case "first":
			first = append(first, w)
		case "second":
			second = append(second, w)
		}
	}
	if second[0].token <= tok1 {
		t.Fatalf("second run's token %d not above the first's %d", second[0].token, tok1)
	}
	for _, w := range first {
		if w.at > second[0].at {
			t.Fatalf("the paused run's command wrote (accepted: %v) after the second run did", w.accepted)
		}
	}
	checkSpans(t, f.spans(), 1)
	f.check(t)
	eventually(t, 15*time.Second, "the slot freed", func() bool { return len(status(t, direct, key).Holders) == 0 })
}

// After a pause longer than its TTL, a holder that checks its lease before
// working must find it lost: the local deadline (last renewal + TTL -
// margin, on the monotonic clock) has passed. Lease.Err only reports what
// the heartbeat goroutine has noticed, so a worker that runs first after
// SIGCONT reads the lease as held although the server expired it.
func TestPausedHolderReadsLostAtOnce(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	project := uniq("pausespin")
	f := newFence(t)
	a := helperCmd(t, "hold", "REDIS_ADDR="+s.Addr, "PROJECT="+project, "RES=heavy", "FENCE="+f.Path, "WHO=spin", "SPIN=1")
	out := lines(t, a)
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	killAtCleanup(t, a)
	expectLine(t, out, "held", 60*time.Second)
	time.Sleep(300 * time.Millisecond)
	if err := a.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // TTL 2s
	if err := a.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	stale := ""
	timer := time.NewTimer(20 * time.Second)
	defer timer.Stop()
	for done := false; !done; {
		select {
		case l, ok := <-out:
			if !ok {
				t.Fatal("helper exited")
			}
			if strings.HasPrefix(l, "stale-held") && stale == "" {
				stale = l
			}
			done = l == "lost-seen"
		case <-timer.C:
			t.Fatal("the resumed holder never saw its lease lost")
		}
	}
	if stale != "" {
		t.Fatalf("after a pause past the TTL the lease read as held (%s)", stale)
	}
}
