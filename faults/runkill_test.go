package faults_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/eventkind"
	"github.com/governor-dev/governor/governor/filebackend"
	"github.com/governor-dev/governor/governor/proc"
	"github.com/governor-dev/governor/internal/proctest"
	"github.com/governor-dev/governor/internal/redistest"
	"github.com/governor-dev/governor/internal/usertest"
	"github.com/governor-dev/governor/internal/view"
)

// Issue 17, cases 1-3: the protected work of a `governor run` never
// overlaps the next holder's, even when governor itself is paused, its
// watchdog is killed, or both are killed together. The checker is the
// work's own progress: each command appends spans of CLOCK_MONOTONIC to
// one file, and merged they never exceed the limit (checkSpans).

// helperProgress is protected work: it appends "WHO START END" (CLOCK_
// MONOTONIC ns) to OUT for every 20ms of work, one write per line, for
// WORK (a duration). IGNORE_TERM=1 ignores SIGTERM, as a command that
// cleans up slowly would. It prints "working" once it has started.
func helperProgress() int {
	if os.Getenv("IGNORE_TERM") == "1" {
		signal.Ignore(syscall.SIGTERM)
	}
	d, err := time.ParseDuration(os.Getenv("WORK"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	f, err := os.OpenFile(os.Getenv("OUT"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	who := os.Getenv("WHO")
	fmt.Println("working")
	for end := time.Now().Add(d); time.Now().Before(end); {
		start := monoNow()
		time.Sleep(20 * time.Millisecond)
		fmt.Fprintf(f, "%s %d %d\n", who, start, monoNow())
	}
	return 0
}

// progressSpans reads the spans helperProgress wrote to path.
func progressSpans(t *testing.T, path string) []span {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []span
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 {
			continue // a line cut by a kill
		}
		s, err1 := strconv.ParseInt(f[1], 10, 64)
		e, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		out = append(out, span{start: s, end: e, weight: 1, who: f[0]})
	}
	return out
}

// runWorld is one backend (file or Redis) and one path (Linux, or the
// portable path macOS takes) for `governor run`s of one project.
type runWorld struct {
	t        *testing.T
	bin      string
	args     []string // global flags: config, backend
	env      []string
	out      string // the progress file
	key      governor.Key
	backend  governor.Backend
	kind     string // file or redis
	portable bool
	user     *usertest.User // runs as this user, if set (newUserRunWorld)
	dir      string         // the runs' working directory, if set
	testBin  string         // this test binary, as the runs can execute it
}

// forEachWorld runs fn on the file backend and on Redis, each on Linux's
// path and on the portable one, one world after the other.
func forEachWorld(t *testing.T, lease string, fn func(t *testing.T, w *runWorld)) {
	eachWorld(t, false, lease, fn)
}

// forEachWorldInParallel is forEachWorld with the worlds side by side,
// for a test that runs in parallel: each world has its own state dir or
// redis-server, project and progress file, and mostly waits.
func forEachWorldInParallel(t *testing.T, lease string, fn func(t *testing.T, w *runWorld)) {
	eachWorld(t, true, lease, fn)
}

func eachWorld(t *testing.T, parallel bool, lease string, fn func(t *testing.T, w *runWorld)) {
	for _, kind := range []string{"file", "redis"} {
		for _, portable := range []bool{false, true} {
			name := kind
			if portable {
				name += "/portable"
			}
			t.Run(name, func(t *testing.T) {
				if parallel {
					t.Parallel()
				}
				fn(t, newRunWorld(t, kind, portable, lease))
			})
		}
	}
}

func newRunWorld(t *testing.T, kind string, portable bool, lease string) *runWorld {
	project := uniq("runkill")
	w := &runWorld{t: t, bin: governorBin(t), kind: kind, portable: portable, testBin: os.Args[0],
		out: filepath.Join(t.TempDir(), "progress"), key: governor.Key{Project: project, Resource: "heavy"}}
	cfg := runConfig(t, project, lease)
	w.args = []string{"--config", cfg}
	switch kind {
	case "file":
		dir := filepath.Join(t.TempDir(), "state")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		w.args = append(w.args, "--backend", "file", "--dir", dir)
		b, err := filebackend.New(dir, filebackend.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		w.backend = b
	default:
		s := redistest.Start(t)
		w.args = append(w.args, "--backend", "redis", "--redis-url", s.URL())
		w.backend = backend(t, client(t, s.Addr))
	}
	w.env = cleanEnv("OUT=" + w.out)
	if portable {
		w.env = append(w.env, "GOVERNOR_PORTABLE=1")
	}
	return w
}

// run starts `governor run` of the world's resource with command, in
// its own process group (a test's kill of governor must not reach its
// own group), and returns it with its stdout lines and stderr.
func (w *runWorld) run(who string, flags []string, env []string, command ...string) (*exec.Cmd, <-chan string, *bytes.Buffer) {
	t := w.t
	args := append(append([]string(nil), w.args...), "run", "--resource", "heavy", "--limit", "1")
	args = append(append(append(args, flags...), "--"), command...)
	c := exec.Command(w.bin, args...)
	c.Env = append(append(append([]string(nil), w.env...), "WHO="+who), env...)
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if w.user != nil {
		c.SysProcAttr.Credential = w.user.Command("").SysProcAttr.Credential
	}
	c.Dir = w.dir
	out, errb := startKilledAtCleanup(t, c)
	return c, out, errb
}

// worker is the command line of a progress helper for w.run.
func worker(env ...string) []string { return workerAt(os.Args[0], env...) }

// workerAt is worker running the test binary at bin.
func workerAt(bin string, env ...string) []string {
	return append([]string{"env", helperEnv + "=progress"}, append(env, bin)...)
}

// holder returns the one holder of the world's resource.
func (w *runWorld) holder() governor.Holder {
	st := status(w.t, w.backend, w.key)
	if len(st.Holders) != 1 {
		w.t.Fatalf("holders %+v, want one", st.Holders)
	}
	return st.Holders[0]
}

// watchdogHolder is the one holder, which run (its governor) declared
// with its watchdog's pid, not its own.
func (w *runWorld) watchdogHolder(run *exec.Cmd) governor.Holder {
	h := w.holder()
	if h.PID == 0 || h.PID == run.Process.Pid {
		w.t.Fatalf("declared pid %d: want the watchdog's, not governor's (%d)", h.PID, run.Process.Pid)
	}
	return h
}

// watchdogKills returns the eventkind.WatchdogKill events of the world's
// resource: what a watchdog recorded having done to a tree.
func (w *runWorld) watchdogKills() []governor.Event {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var evs []governor.Event
	if w.backend != nil {
		var err error
		if evs, err = w.backend.Events(ctx, w.key, time.Time{}); err != nil {
			w.t.Fatalf("events of %s: %v", w.key, err)
		}
	} else {
		// A second user's state dir, which root does not open: read it
		// as they do, through 'governor events --json'.
		c := exec.CommandContext(ctx, w.bin, append(append([]string(nil), w.args...), "--json", "events", w.key.Resource)...)
		c.Env, c.Dir = w.env, w.dir
		c.SysProcAttr = &syscall.SysProcAttr{Credential: w.user.Command("").SysProcAttr.Credential}
		out, err := c.Output()
		if err != nil {
			w.t.Fatalf("governor events of %s as %s: %v\n%s", w.key, w.user.Name, err, out)
		}
		var rows []view.Event
		if err := json.Unmarshal(out, &rows); err != nil {
			w.t.Fatalf("governor events --json of %s: %v\n%s", w.key, err, out)
		}
		for _, r := range rows {
			evs = append(evs, governor.Event{Kind: r.Kind, LeaseID: r.LeaseID, Token: r.Token, Detail: r.Detail, At: r.At})
		}
	}
	var out []governor.Event
	for _, e := range evs {
		if e.Kind == eventkind.WatchdogKill {
			out = append(out, e)
		}
	}
	return out
}

// second runs the next holder: it waits for the slot and works for 1s.
func (w *runWorld) second() {
	t := w.t
	c, out, errb := w.run("second", []string{"--if-busy", "wait", "--wait-timeout", "2m"}, nil, workerAt(w.testBin, "WORK=1s")...)
	expectLine(t, out, "working", 3*time.Minute)
	if err := c.Wait(); err != nil {
		t.Fatalf("second run: %v\n%s", err, errb)
	}
}

// waitExit waits for c, paused or not, and returns its exit code.
func waitExit(t *testing.T, c *exec.Cmd, errb *bytes.Buffer) int {
	return proctest.WaitExit(t, c, 2*time.Minute, errb)
}

// Case 1: governor is stopped (SIGSTOP, as `kill -STOP $PPID` from its
// command does) while its command works on. Its watchdog, not stopped,
// stops the command by the lease's local deadline; the next run is
// granted the slot after the TTL, and the two commands' work never
// overlaps. Resumed, governor exits 122.
func TestPausedGovernorWorkNeverOverlaps(t *testing.T) {
	forEachWorld(t, "lease:\n  ttl: 3s\n  heartbeat: 500ms\n", func(t *testing.T, w *runWorld) {
		w.pausedGovernorNeverOverlaps(worker("WORK=2m"))
	})
}

// pausedGovernorNeverOverlaps runs command, stops governor (SIGSTOP)
// while it works, runs the next holder, resumes governor, and checks that
// it exits 122 and that the two commands' work never overlapped.
func (w *runWorld) pausedGovernorNeverOverlaps(command []string) {
	t := w.t
	first, out, errb := w.run("first", []string{"--kill-grace", "1s"}, nil, command...)
	expectLine(t, out, "working", time.Minute)
	eventually(t, 20*time.Second, "the first command's progress", func() bool { return len(progressSpans(t, w.out)) >= 5 })
	st, err := proc.Stat(first.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	proctest.StopOutsideWrite(t, first.Process.Pid, st.Start)
	w.second()
	if err := first.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if code := waitExit(t, first, errb); code != 122 {
		t.Fatalf("resumed run: exit %d, want 122\n%s", code, errb)
	}
	checkSpans(t, progressSpans(t, w.out), 1)
	t.Logf("first run's stderr:\n%s", errb)
	// The watchdog stopped the tree; it recorded why, on the lease it
	// guarded (the first run's, not the second's).
	kills := w.watchdogKills()
	if len(kills) == 0 {
		t.Fatalf("no %s event on %s after the watchdog stopped the paused run's tree", eventkind.WatchdogKill, w.key)
	}
	for _, e := range kills {
		if !strings.Contains(e.Detail, "is stopped") || e.LeaseID == "" {
			t.Fatalf("%s event %+v: want the lease and why (governor is stopped)", eventkind.WatchdogKill, e)
		}
	}
}

// Case 2: the watchdog, one of the declared processes, is killed while
// the command ignores TERM. Governor, declared beside it, keeps the slot
// while it stops the tree (TERM, the grace, KILL); only then is the next
// run granted it.
func TestWatchdogKilledWorkNeverOverlaps(t *testing.T) {
	t.Parallel()
	forEachWorldInParallel(t, "lease:\n  ttl: 20s\n", func(t *testing.T, w *runWorld) {
		first, out, errb := w.run("first", []string{"--kill-grace", "3s"}, []string{"IGNORE_TERM=1"}, worker("WORK=2m")...)
		expectLine(t, out, "working", time.Minute)
		h := w.watchdogHolder(first)
		if err := syscall.Kill(h.PID, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		w.second()
		if code := waitExit(t, first, errb); code != 122 {
			t.Fatalf("run whose watchdog died: exit %d, want 122\n%s", code, errb)
		}
		checkSpans(t, progressSpans(t, w.out), 1)
	})
}

// Case 3: governor and its watchdog are killed together (kill -9 of
// both, as `pkill -9 -f governor` does). The command's child survives
// (it left the leader behind, which the parent-death signal kills on
// Linux) and works on for 4s: the slot stays held until it ends — by
// its run id in its environment, its cgroup, and on the file backend by
// the lease file it inherited, which is still locked. On the file
// backend also a grandchild that cleared its environment (env -i) keeps
// the slot, by the lease file alone.
func TestGovernorAndWatchdogKilledWorkNeverOverlaps(t *testing.T) {
	t.Parallel()
	forEachWorldInParallel(t, "lease:\n  ttl: 30s\n", func(t *testing.T, w *runWorld) {
		// The worker in the background of a shell, which passes it every
		// descriptor (the lease files) and waits.
		args := []string{"sh", "-c", `"$@" & wait`, "sh", "env"}
		if w.kind == "file" {
			args = append(args, "-i", "PATH="+os.Getenv("PATH"), "OUT="+w.out, "WHO=first")
		}
		args = append(args, helperEnv+"=progress", "WORK=4s", os.Args[0])
		first, out, errb := w.run("first", nil, nil, args...)
		expectLine(t, out, "working", time.Minute)
		h := w.holder()
		// Together: stopped first, so that neither can react to the
		// other's death (governor would stop the tree, the watchdog
		// sweep it). The leader (the shell) dies with them, as the
		// parent-death signal has it die on Linux: only the worker is
		// left, and the proofs of its life are tested alone.
		var leader int
		for _, c := range proc.Children(first.Process.Pid) {
			if c != h.PID {
				leader = c
			}
		}
		if leader == 0 {
			t.Fatalf("no command under governor pid %d", first.Process.Pid)
		}
		for _, pid := range []int{h.PID, first.Process.Pid} {
			if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
		}
		for _, pid := range []int{h.PID, first.Process.Pid, leader} {
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
				t.Fatal(err)
			}
		}
		// Not waited for here: its stderr stays open in the surviving
		// worker, and Wait would wait for that.
		killed := monoNow()
		w.second()
		spans := progressSpans(t, w.out)
		var lastFirst, firstSecond int64
		for _, s := range spans {
			if s.who == "first" {
				lastFirst = max(lastFirst, s.end)
			} else if firstSecond == 0 || s.start < firstSecond {
				firstSecond = s.start
			}
		}
		t.Logf("the first run's work ended %v after the kill; the second's began %v after it",
			time.Duration(lastFirst-killed), time.Duration(firstSecond-killed))
		checkSpans(t, spans, 1)
		_ = errb // still written to by the surviving worker's copier: not read here
	})
}
