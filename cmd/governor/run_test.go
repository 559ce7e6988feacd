package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/eventkind"
	"github.com/governor-dev/governor/governor/filebackend"
	"github.com/governor-dev/governor/governor/proc"
	"github.com/governor-dev/governor/governor/redisbackend"
	"github.com/governor-dev/governor/internal/exitcode"
	"github.com/governor-dev/governor/internal/leasetest"
	"github.com/governor-dev/governor/internal/proctest"
	"github.com/governor-dev/governor/internal/redistest"
	"github.com/governor-dev/governor/internal/runner"
	"github.com/governor-dev/governor/internal/runner/recordtest"
)

// The governor binary, built once on first use: `governor run` is tested
// as users run it, as a process that can be signalled and killed. TestMain
// removes it at the end.
var bin proctest.Binary

// governorBin returns the path of the governor binary, building it on the
// first call.
func governorBin(t testing.TB) string { return bin.Path(t) }

// startQueued starts c, a run of "heavy" that must wait, and returns
// once it is queued in g; the buffer collects its stderr.
func startQueued(t *testing.T, tg *target, g *governor.Governor, c *exec.Cmd) *bytes.Buffer {
	t.Helper()
	var errb bytes.Buffer
	c.Stderr = &errb
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the run did not queue", func() bool { return len(tg.status(t, g, "heavy").Waiters) == 1 })
	return &errb
}

func TestMain(m *testing.M) {
	// An in-process Main's `run` starts its watchdog as /proc/self/exe,
	// which is this test binary: act as governor then.
	if len(os.Args) > 2 && os.Args[1] == "run" && os.Args[2] == "--watchdog" {
		os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	if code, ok := fleetHelper(); ok { // fleet_test.go's agent processes
		os.Exit(code)
	}
	// The governors of this binary keep their state (the Redis loss
	// witness, run entries, the file backend's default dir) in a dir of
	// their own. In the user's, shared by earlier runs and the packages
	// tested beside this one, a fresh redis-server on a port an earlier
	// one used is that server's data lost to a governor that witnessed
	// it: its runtest resources are quarantined.
	state, err := os.MkdirTemp("", "governor-test-state-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("XDG_STATE_HOME", state)
	code := m.Run()
	bin.Remove()
	faultsBin.Remove()
	_ = os.RemoveAll(state)
	os.Exit(code)
}

const runProject = "runtest"

// target is one backend the run tests use.
type target struct {
	bin      string // the governor binary
	name     string
	dir      string // file backend state dir
	redisURL string
	config   string
}

// runTargets runs fn against the file backend and a real redis-server.
func runTargets(t *testing.T, config string, fn func(t *testing.T, tg *target)) {
	t.Run("file", func(t *testing.T) {
		fn(t, &target{bin: governorBin(t), name: "file", dir: filepath.Join(t.TempDir(), "state"), config: writeRunConfig(t, config)})
	})
	t.Run("redis", func(t *testing.T) {
		s := redistest.Start(t)
		fn(t, &target{bin: governorBin(t), name: "redis", redisURL: s.URL(), config: writeRunConfig(t, config)})
	})
}

func fileTarget(t *testing.T, config string) *target {
	return &target{bin: governorBin(t), name: "file", dir: filepath.Join(t.TempDir(), "state"), config: writeRunConfig(t, config)}
}

// writeRunConfig writes a config with project runtest, heavy (limit 1)
// and extra YAML.
func writeRunConfig(t testing.TB, extra string) string {
	return configFile(t, "project: "+runProject+"\nresources:\n  heavy: {limit: 1}\n"+extra)
}

// global returns the global flags that select tg.
func (tg *target) global() []string {
	if tg.redisURL != "" {
		return []string{"--config", tg.config, "--backend", "redis", "--redis-url", tg.redisURL}
	}
	return []string{"--config", tg.config, "--backend", "file", "--dir", tg.dir}
}

// command returns governor with tg's global flags and args, in an
// environment without the developer's GOVERNOR_* variables.
func (tg *target) command(args ...string) *exec.Cmd {
	c := exec.Command(tg.bin, append(tg.global(), args...)...)
	c.Env = cleanEnv()
	return c
}

func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		// GOVERNOR_PORTABLE selects the path under test: it is kept.
		if !strings.HasPrefix(kv, "GOVERNOR_") || strings.HasPrefix(kv, proc.PortableEnv+"=") {
			env = append(env, kv)
		}
	}
	return env
}

// run runs governor to its end and returns exit code, stdout and stderr.
func (tg *target) run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return execCode(t, tg.command(args...))
}

// execCode runs c to its end and returns its exit code, stdout and stderr.
func execCode(t *testing.T, c *exec.Cmd) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String(), errb.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String(), errb.String()
	}
	t.Fatalf("%s: %v", c.Args, err)
	return 0, "", ""
}

// soleHolder waits (within at most, what naming the wait) until
// resource has one holder, and returns it.
func (tg *target) soleHolder(t *testing.T, g *governor.Governor, resource string, within time.Duration, what string) governor.Holder {
	t.Helper()
	var h governor.Holder
	eventually(t, within, what, func() bool {
		st := tg.status(t, g, resource)
		if len(st.Holders) == 1 {
			h = st.Holders[0]
		}
		return len(st.Holders) == 1
	})
	return h
}

// governor opens tg's backend in the test process.
func (tg *target) governor(t testing.TB) *governor.Governor {
	t.Helper()
	var b governor.Backend
	if tg.redisURL != "" {
		opt, err := redis.ParseURL(tg.redisURL)
		if err != nil {
			t.Fatal(err)
		}
		rdb := redis.NewClient(opt)
		t.Cleanup(func() { rdb.Close() })
		rb, err := redisbackend.New(context.Background(), rdb)
		if err != nil {
			t.Fatal(err)
		}
		b = rb
	} else {
		fb, err := filebackend.New(tg.dir, filebackend.Options{})
		if err != nil {
			t.Fatal(err)
		}
		b = fb
	}
	g, err := governor.New(b, governor.Options{Project: runProject, Session: "test-holder"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

func (tg *target) status(t *testing.T, g *governor.Governor, resource string) governor.Status {
	t.Helper()
	st, err := g.Status(context.Background(), resource)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			t.Fatalf("after %v: %s", d, what)
		case <-tick.C:
		}
	}
}

// readTerminal collects what appears on a pty's master side; the returned
// function reads the transcript so far.
func readTerminal(master *os.File) func() string {
	var mu sync.Mutex
	var seen bytes.Buffer
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			mu.Lock()
			seen.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		return seen.String()
	}
}

func TestRunHelpDocumentsExitCodesAndEnvironment(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Main([]string{"run", "--help"}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("run --help: exit %d: %s", code, &errb)
	}
	for _, want := range []string{"Exit codes:", "73 ", "75 ", "76 ", "122 ", "124 ", "125 ", "126 ", "127 ", "128+N",
		"GOVERNOR_HELD", "GOVERNOR_TOKEN", "GOVERNOR_SESSION", "GOVERNOR_RUN_IDS", "watchdog", "--record", "--kill-grace"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("run --help lacks %q", want)
		}
	}
	if strings.Contains(out.String(), "--watchdog ") {
		t.Error("run --help shows the internal --watchdog flag")
	}
}

func TestRunBadFlagsExit125NamingTheValue(t *testing.T) {
	tg := fileTarget(t, "")
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--resource", "heavy", "--if-busy", "maybe", "--", "true"}, []string{`"maybe"`, "fail, wait or skip"}},
		{[]string{"--resource", "heavy", "--timeout", "soon", "--", "true"}, []string{`"soon"`, "--timeout"}},
		{[]string{"--resource", "heavy", "--timeout", "-1s", "--", "true"}, []string{"--timeout -1s", "positive"}},
		{[]string{"--resource", "heavy", "--limit", "-3", "--", "true"}, []string{"--limit -3", "1 to"}},
		{[]string{"--resource", "x y", "--limit", "1", "--", "true"}, []string{`"x y"`, "without white space"}},
		{[]string{"--provider", "anthropic", "--", "true"}, []string{`provider "anthropic"`, "providers.anthropic.max_concurrency"}},
		{[]string{"--resource", "heavy", "--if-busy", "skip", "--wait-timeout", "1s", "--", "true"}, []string{"--wait-timeout 1s", "--if-busy wait"}},
		{[]string{"--resource", "heavy"}, []string{"no command"}},
	} {
		var out, errb bytes.Buffer
		code := Main(append(append(tg.global(), "run"), tc.args...), strings.NewReader(""), &out, &errb)
		if code != exitcode.Failure {
			t.Errorf("run %q: exit %d, want 125; stderr %s", tc.args, code, &errb)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(errb.String(), w) {
				t.Errorf("run %q: stderr %q lacks %q", tc.args, &errb, w)
			}
		}
	}
}

// In-process Main, as the other commands are tested: the watchdog is this
// test binary (see TestMain), and the default resource comes from
// run.max_concurrent_runs.
func TestRunInProcess(t *testing.T) {
	t.Setenv("GORACE", "atexit_sleep_ms=0") // the watchdog is this binary, maybe built with -race
	tg := fileTarget(t, "run:\n  max_concurrent_runs: 2\n")
	var out, errb bytes.Buffer
	code := Main(append(tg.global(), "run", "sh", "-c", `echo "$GOVERNOR_HELD"; exit 4`), strings.NewReader(""), &out, &errb)
	if code != 4 || !strings.HasPrefix(out.String(), runProject+"/run=") {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 4 and the run slot in GOVERNOR_HELD", code, &out, &errb)
	}
}

func TestRunExitCodes(t *testing.T) {
	t.Parallel()
	notExec := filepath.Join(t.TempDir(), "not-executable")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runTargets(t, "", func(t *testing.T, tg *target) {
		for _, tc := range []struct {
			name string
			args []string
			code int
		}{
			{"own code", []string{"sh", "-c", "exit 3"}, 3},
			{"zero", []string{"true"}, 0},
			{"killed by TERM", []string{"sh", "-c", "kill -TERM $$"}, 128 + 15},
			{"killed by KILL", []string{"sh", "-c", "kill -KILL $$"}, 128 + 9},
			{"not found", []string{"no-such-command-for-governor"}, 127},
			{"not found by path", []string{"./no/such/file"}, 127},
			{"not executable", []string{notExec}, 126},
			{"directory", []string{"/"}, 126},
		} {
			code, _, errs := tg.run(t, append([]string{"run", "--resource", "heavy", "--"}, tc.args...)...)
			if code != tc.code {
				t.Errorf("%s: exit %d, want %d; stderr %s", tc.name, code, tc.code, errs)
			}
		}

		code, _, errs := tg.run(t, "run", "--resource", "heavy", "--timeout", "300ms", "--", "sleep", "30")
		if code != 124 || !strings.Contains(errs, "--timeout 300ms passed") {
			t.Errorf("timeout: exit %d, want 124; stderr %s", code, errs)
		}

		g := tg.governor(t)
		l := leasetest.HoldHeavy(t, g)
		for _, tc := range []struct {
			flags []string
			code  int
		}{
			{nil, 73},
			{[]string{"--if-busy", "fail"}, 73},
			{[]string{"--if-busy", "wait", "--wait-timeout", "200ms"}, 73},
		} {
			args := append(append([]string{"run", "--resource", "heavy"}, tc.flags...), "--", "true")
			code, _, errs := tg.run(t, args...)
			if code != tc.code {
				t.Errorf("busy %q: exit %d, want %d; stderr %s", tc.flags, code, tc.code, errs)
			}
			for _, want := range []string{"held by session test-holder", "since", "last heartbeat", "expires in",
				"governor takeover heavy --lease " + l.ID() + " --project " + runProject} {
				if !strings.Contains(errs, want) {
					t.Errorf("busy %q: stderr %q lacks %q", tc.flags, errs, want)
				}
			}
		}
		// A skip is the expected outcome of a cron job: one short line
		// (no cron mail of five), and nothing with --quiet.
		code, _, errs = tg.run(t, "run", "--resource", "heavy", "--if-busy", "skip", "--", "true")
		if want := "governor: heavy is busy: 1 of 1 in use, held by session test-holder; skipped (--if-busy skip)\n"; code != 75 || errs != want {
			t.Errorf("--if-busy skip: exit %d, stderr %q; want 75 and %q", code, errs, want)
		}
		for _, flags := range [][]string{{"--if-busy", "skip"}, {"--if-busy", "fail"}, {"--wait-timeout", "100ms"}} {
			args := append(append([]string{"run", "--quiet", "--resource", "heavy"}, flags...), "--", "true")
			if code, out, errs := tg.run(t, args...); (code != 75 && code != 73) || out != "" || errs != "" {
				t.Errorf("run --quiet %q: exit %d, stdout %q, stderr %q; want 73 or 75 and nothing printed", flags, code, out, errs)
			}
		}
		if st := tg.status(t, g, "heavy"); len(st.Holders) != 1 || len(st.Waiters) != 0 {
			t.Errorf("refusals left state behind: %+v", st)
		}
	})
}

// Runs of a limit-1 resource never overlap: each child writes its start
// and end times; the intervals must be disjoint. The first to hold it
// holds it until the others are seen waiting, and 0.2 s more (a file the
// test makes then: with a fixed 0.2 s hold from its start, a run that
// started late under load never waited, and the test failed on "1 runs
// waited, want 2"); each of them must have waited over 0.1 s.
func TestRunLimitOneNeverOverlaps(t *testing.T) {
	t.Parallel()
	runTargets(t, "", func(t *testing.T, tg *target) {
		dir := t.TempDir()
		times, rec, goOn := filepath.Join(dir, "times"), filepath.Join(dir, "runs.jsonl"), filepath.Join(dir, "go")
		script := `echo "$GOVERNOR_RUN_IDS S $(date +%s%N)" >> "$0"; while [ ! -e "$1" ]; do sleep 0.05; done
echo "$GOVERNOR_RUN_IDS E $(date +%s%N)" >> "$0"`
		const n = 3
		var wg sync.WaitGroup
		codes := make([]int, n)
		for i := range n {
			wg.Go(func() {
				codes[i], _, _ = tg.run(t, "run", "--resource", "heavy", "--if-busy", "wait", "--record", rec, "--", "sh", "-c", script,
					times, goOn)
			})
		}
		g := tg.governor(t)
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
			st := tg.status(t, g, "heavy")
			if len(st.Holders) == 1 && len(st.Waiters) == n-1 {
				break
			}
			if time.Now().After(deadline) {
				_ = os.WriteFile(goOn, nil, 0o600)
				wg.Wait()
				t.Fatalf("a minute after %d runs started: %d holding, %d waiting; want 1 and %d", n, len(st.Holders), len(st.Waiters), n-1)
			}
		}
		// Seen waiting, the others wait 0.2 s more before the holder may
		// end: each then waited more than the 0.1 s an immediate grant
		// never takes. (This only lengthens their waits; load can only
		// lengthen them further.)
		time.Sleep(200 * time.Millisecond)
		if err := os.WriteFile(goOn, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		for i, c := range codes {
			if c != 0 {
				t.Fatalf("run %d: exit %d", i, c)
			}
		}
		type span struct{ s, e int64 }
		spans := map[string]*span{}
		b, err := os.ReadFile(times)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			f := strings.Fields(line)
			ns, _ := strconv.ParseInt(f[2], 10, 64)
			if spans[f[0]] == nil {
				spans[f[0]] = &span{}
			}
			if f[1] == "S" {
				spans[f[0]].s = ns
			} else {
				spans[f[0]].e = ns
			}
		}
		var all []span
		for _, s := range spans {
			all = append(all, *s)
		}
		sort.Slice(all, func(i, j int) bool { return all[i].s < all[j].s })
		if len(all) != n {
			t.Fatalf("%d runs wrote times, want %d:\n%s", len(all), n, b)
		}
		for i := 1; i < n; i++ {
			if all[i].s < all[i-1].e {
				t.Fatalf("runs overlap: %+v", all)
			}
		}
		waited := 0
		for _, r := range recordtest.Ends(t, rec) {
			if r.WaitSeconds > 0.1 {
				waited++
			}
		}
		if waited < n-1 {
			t.Fatalf("%d runs waited, want %d", waited, n-1)
		}
	})
}

// A tree that ignores TERM and keeps spawning, with a setsid'd member, is
// gone when governor exits after --timeout, within timeout + grace + 1s;
// an unrelated process carrying the same marker survives.
func TestRunTimeoutStopsWholeTree(t *testing.T) {
	tg := fileTarget(t, "")
	marker := proctest.NewMarker(t, "govrun")
	sleep := proctest.MarkedSleep(t, marker)
	t.Cleanup(func() { proctest.KillMarked(marker) })
	sentinel := exec.Command(sleep, "60")
	if err := sentinel.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sentinel.Process.Kill(); _ = sentinel.Wait() }()

	script := `trap '' TERM
setsid sh -c "trap '' TERM; $0 60" &
while :; do sh -c "trap '' TERM; $0 60; :" & sleep 0.05; done`
	const timeout, grace = 500 * time.Millisecond, 300 * time.Millisecond
	start := time.Now()
	code, _, errs := tg.run(t, "run", "--resource", "heavy", "--timeout", timeout.String(), "--kill-grace", grace.String(),
		"--", "sh", "-c", script, sleep)
	took := time.Since(start)
	t.Logf("the run took %v", took)
	if code != 124 {
		t.Fatalf("exit %d, want 124; stderr %s", code, errs)
	}
	if left := proctest.Marked(marker); len(left) != 1 || left[0] != sentinel.Process.Pid {
		t.Fatalf("after governor exited, processes with the marker: %v; want only the sentinel %d", left, sentinel.Process.Pid)
	}
	// Not a timing claim (BenchmarkRunTimeout-style figures belong in
	// benchmarks): the command runs for ever, its sleeps for 60 s, so a
	// run that ended well before those did so by its timeout. Under load
	// 59 the old bound, timeout + grace + 1 s, failed.
	if max := 30 * time.Second; took > max {
		t.Fatalf("the run took %v, want well under the command's own 60 s (at most %v)", took, max)
	}
}

// SIGKILL of governor: neither the child nor a setsid'd grandchild
// outlives it, and the slot becomes free (file backend: as soon as the
// tree is dead; Redis: by the same-host proof that the declared holder,
// the watchdog, is dead).
func TestRunSIGKILLOfGovernor(t *testing.T) {
	runTargets(t, "", func(t *testing.T, tg *target) {
		marker := proctest.NewMarker(t, "govrun")
		sleep := proctest.MarkedSleep(t, marker)
		t.Cleanup(func() { proctest.KillMarked(marker) })
		c := tg.command("run", "--resource", "heavy", "--", "sh", "-c", `setsid "$0" 60 & "$0" 60; :`, sleep)
		var errb bytes.Buffer
		c.Stderr = &errb
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, "the tree did not start", func() bool { return len(proctest.Marked(sleep+"\x0060\x00")) == 2 })
		entry := entryLeft(t, tg.status(t, tg.governor(t), "heavy").Holders[0])
		killRun(t, tg, c, "heavy")
		killed := time.Now()
		eventually(t, 5*time.Second, "processes of the tree outlived governor", func() bool { return len(proctest.Marked(marker)) == 0 })
		// The watchdog removes the run's entry with its tree: a next run
		// removes only those of its own store and resources.
		eventually(t, 30*time.Second, "the watchdog left the run's entry "+entry, func() bool {
			_, err := os.Stat(entry)
			return errors.Is(err, os.ErrNotExist)
		})
		t.Logf("tree gone %v after SIGKILL of governor", time.Since(killed))
		tries := 0
		eventually(t, 5*time.Second, "the slot did not become free", func() bool {
			tries++
			code, _, errs := tg.run(t, "run", "--resource", "heavy", "--", "true")
			if code != 0 {
				t.Logf("try %d at %v: exit %d: %s", tries, time.Since(killed), code, errs)
			}
			return code == 0
		})
		t.Logf("slot free %v after SIGKILL of governor, at try %d", time.Since(killed), tries)
		// The watchdog recorded why it killed the tree, on the lease it
		// guarded.
		evs, err := tg.governor(t).Events(context.Background(), "heavy", time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		var kills []governor.Event
		for _, e := range evs {
			if e.Kind == eventkind.WatchdogKill {
				kills = append(kills, e)
			}
		}
		if len(kills) != 1 || kills[0].LeaseID == "" || !strings.Contains(kills[0].Detail, "governor exited without releasing") {
			t.Fatalf("%s events %+v; want one naming the lease and that governor exited without releasing", eventkind.WatchdogKill, kills)
		}
	})
}

// runCgroupsOrSkip skips t where governor run can make no cgroup v2
// group (no cgroup v2, not root). The probe's name is this test's own:
// tests of other packages and worktrees make and remove governor-run-*
// groups beside it at the same time.
func runCgroupsOrSkip(t *testing.T) {
	t.Helper()
	probe, ok := proc.ChildCgroup(proc.RunCgroupName(fmt.Sprintf("probe-%d-%d", os.Getpid(), time.Now().UnixNano())))
	if !ok {
		t.Skip("no cgroup v2 hierarchy here")
	}
	if err := os.Mkdir(probe, 0o755); err != nil {
		t.Skipf("governor run can make no cgroup here (as root it can; CI runs as root): %v", err)
	}
	_ = os.Remove(probe)
}

// runCgroup returns the cgroup of the run that holds resource, as its
// lease declares it, failing t unless the run has one and pid, a process
// of its command, is in it. Only this group is the test's: other tests
// make governor-run-* groups beside it at the same time.
func runCgroup(t *testing.T, tg *target, resource string, pid int) string {
	t.Helper()
	st := tg.status(t, tg.governor(t), resource)
	if len(st.Holders) != 1 || st.Holders[0].Cgroup == "" {
		t.Fatalf("want one holder of %s declaring its run's cgroup: %+v", resource, st.Holders)
	}
	dir := st.Holders[0].Cgroup
	if in, ok := proc.CgroupOf(pid); !ok || in != dir {
		t.Fatalf("the command (pid %d) is in cgroup %q, not in its run's declared %s", pid, in, dir)
	}
	return dir
}

// cgroupGone reports whether the cgroup dir no longer exists.
func cgroupGone(dir string) bool {
	_, err := os.Stat(dir)
	return errors.Is(err, os.ErrNotExist)
}

// SIGKILL of governor with a descendant that no marker finds (it cleared
// its environment and left the session): the tree's cgroup holds it, the
// watchdog kills the cgroup and removes it. Where no cgroup can be made
// this is a documented limit, and the test skips.
func TestRunSIGKILLOfGovernorEscaped(t *testing.T) {
	runCgroupsOrSkip(t)
	tg := fileTarget(t, "")
	marker := proctest.NewMarker(t, "govrun")
	sleep := proctest.MarkedSleep(t, marker)
	t.Cleanup(func() { proctest.KillMarked(marker) })
	c := tg.command("run", "--resource", "heavy", "--", "sh", "-c", `env -i setsid "$0" 60 & "$0" 60; :`, sleep)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	var sleeps []int
	eventually(t, 10*time.Second, "the tree did not start", func() bool {
		sleeps = proctest.Marked(sleep + "\x0060\x00")
		return len(sleeps) == 2
	})
	group := runCgroup(t, tg, "heavy", sleeps[0])
	killRun(t, tg, c, "heavy")
	eventually(t, 10*time.Second, "processes of the tree outlived governor", func() bool { return len(proctest.Marked(marker)) == 0 })
	eventually(t, 10*time.Second, "the run's cgroup "+group+" was not removed", func() bool { return cgroupGone(group) })
}

// SIGKILL of the outer governor of a nested run: the outer watchdog kills
// the outer group, which holds the inner governor, its watchdog and the
// inner group; nothing is left, no group either.
func TestRunSIGKILLOfNestedGovernors(t *testing.T) {
	runCgroupsOrSkip(t)
	_, groups := killNestedOuter(t, `env -i setsid "$0" 60 & "$0" 60; :`)
	if len(groups) != 2 {
		t.Fatalf("the runs' cgroups: %q, want the outer and the inner one", groups)
	}
	for _, g := range groups {
		eventually(t, 10*time.Second, "the run's cgroup "+g+" was not removed", func() bool { return cgroupGone(g) })
	}
}

// INT while waiting: exit 130, no waiter and no lease left behind.
func TestRunInterruptWhileWaiting(t *testing.T) {
	runTargets(t, "", func(t *testing.T, tg *target) {
		g := tg.governor(t)
		l := leasetest.HoldHeavy(t, g)
		rec := filepath.Join(t.TempDir(), "runs.jsonl")
		c := tg.command("run", "--resource", "heavy", "--if-busy", "wait", "--record", rec, "--", "true")
		errb := startQueued(t, tg, g, c)
		if err := c.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		err := c.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 130 {
			t.Fatalf("exit %v, want 130; stderr %s", err, errb)
		}
		st := tg.status(t, g, "heavy")
		if len(st.Waiters) != 0 || len(st.Holders) != 1 || st.Holders[0].LeaseID != l.ID() {
			t.Fatalf("after INT: %+v", st)
		}
		if r := recordtest.Ends(t, rec); len(r) != 1 || r[0].Outcome != runner.OutcomeInterrupted || r[0].ExitCode != 130 {
			t.Fatalf("records %+v", r)
		}
	})
}

// A lease taken away while the command runs: the tree is stopped, 122,
// at the next heartbeat, long before the command would end. The TTL is
// long so that a loaded machine's late heartbeat is not the loss seen.
func TestRunLeaseLost(t *testing.T) {
	runTargets(t, "lease:\n  ttl: 20s\n  heartbeat: 250ms\n", func(t *testing.T, tg *target) {
		g := tg.governor(t)
		c := tg.command("run", "--resource", "heavy", "--kill-grace", "200ms", "--", "sleep", "300")
		var errb bytes.Buffer
		c.Stderr = &errb
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		h := tg.soleHolder(t, g, "heavy", 10*time.Second, "the run did not acquire")
		res, err := g.Backend().Admin(context.Background(), governor.Key{Project: runProject, Resource: "heavy"}, governor.Action{Kind: eventkind.Reclaimed, IDs: []string{h.LeaseID}, Token: h.Token})
		ok := res.Changed
		if err != nil || !ok {
			t.Fatalf("Reclaim: %v, %v", ok, err)
		}
		start := time.Now()
		err = c.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 122 || !strings.Contains(errb.String(), "lease on heavy was lost") {
			t.Fatalf("exit %v, want 122; stderr %s", err, &errb)
		}
		if d := time.Since(start); d > time.Minute {
			t.Fatalf("took %v after the loss", d)
		}
	})
}

// Nested runs on a limit-1 resource: the inner one does not acquire, its
// record says nested, and the outer lease is granted and released once.
func TestRunNested(t *testing.T) {
	tg := fileTarget(t, "")
	rec := filepath.Join(t.TempDir(), "runs.jsonl")
	inner := append(append([]string{tg.bin}, tg.global()...), "run", "--resource", "heavy", "--record", rec, "--",
		"sh", "-c", `echo "$GOVERNOR_HELD"`)
	code, out, errs := tg.run(t, append([]string{"run", "--resource", "heavy", "--record", rec, "--"}, inner...)...)
	if code != 0 || !strings.HasPrefix(out, runProject+"/heavy=") {
		t.Fatalf("exit %d, stdout %q, stderr %s", code, out, errs)
	}
	recs := recordtest.Ends(t, rec)
	if len(recs) != 2 {
		t.Fatalf("%d records, want 2", len(recs))
	}
	in, outer := recs[0], recs[1] // the inner run ends first
	if !in.Nested || in.WaitSeconds != 0 || !in.Resources[0].Nested || outer.Nested || in.Resources[0].Lease != outer.Resources[0].Lease ||
		in.OuterRun != outer.ID || outer.OuterRun != "" {
		t.Fatalf("inner %+v\nouter %+v", in, outer)
	}
	// Grant records: the outer run's first, then the inner one's, naming
	// the outer run.
	if all := recordtest.All(t, rec); len(all) != 4 || all[0].Kind != runner.KindGrant || all[0].ID != outer.ID ||
		all[1].Kind != runner.KindGrant || all[1].ID != in.ID || all[1].OuterRun != outer.ID || !all[1].Nested {
		t.Fatalf("records %+v", all)
	}
	// The lease's id and the secret that proves it.
	id, secret, _ := strings.Cut(strings.TrimPrefix(strings.TrimSpace(out), runProject+"/heavy="), ".")
	if id != outer.Resources[0].Lease || governor.LeaseIDOf(secret) != id {
		t.Fatalf("inner child saw GOVERNOR_HELD=%q, want %s/heavy=%s.SECRET", out, runProject, outer.Resources[0].Lease)
	}
	st := tg.status(t, tg.governor(t), "heavy")
	if st.Used != 0 || st.Counters.Acquired != 1 || st.Counters.Released != 1 {
		t.Fatalf("want one grant and one release: %+v", st)
	}
}

// SIGKILL of governor while its command runs: the record file keeps the
// grant record with the wait, and has no end record.
func TestRunRecordSurvivesSIGKILL(t *testing.T) {
	tg := fileTarget(t, "")
	g := tg.governor(t)
	l := leasetest.HoldHeavy(t, g)
	marker := proctest.NewMarker(t, "govrec")
	sleep := proctest.MarkedSleep(t, marker)
	t.Cleanup(func() { proctest.KillMarked(marker) })
	rec := filepath.Join(t.TempDir(), "runs.jsonl")
	c := tg.command("run", "--resource", "heavy", "--if-busy", "wait", "--record", rec, "--", sleep, "60")
	errb := startQueued(t, tg, g, c)
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	// governor's own command line names the command too: wait for the
	// process whose argv[0] is the command.
	eventually(t, 30*time.Second, "the command did not start", func() bool {
		for _, pid := range proctest.Marked(marker) {
			if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil && bytes.HasPrefix(b, []byte(sleep+"\x00")) {
				return true
			}
		}
		return false
	})
	st := tg.status(t, g, "heavy")
	killRun(t, tg, c, "heavy")
	all := recordtest.All(t, rec)
	if len(all) != 1 || all[0].Kind != runner.KindGrant {
		t.Fatalf("records %+v, want only the grant record; stderr %s", all, errb)
	}
	gr := all[0]
	if gr.WaitSeconds <= 0 || gr.Nested || len(st.Holders) != 1 || gr.Resources[0].Lease != st.Holders[0].LeaseID || gr.Granted.IsZero() {
		t.Fatalf("grant record %+v; holders then %+v", gr, st.Holders)
	}
	if inv := runner.Invocations(all); len(inv) != 1 || inv[0].Kind != runner.KindGrant || inv[0].Outcome != "" {
		t.Fatalf("invocations %+v: the killed run must show as never ended", inv)
	}
}

// {a,b} against {b,a}, limit 1 each, in a loop: the fixed order means no
// deadlock.
func TestRunLockOrderNeverDeadlocks(t *testing.T) {
	t.Parallel()
	tg := fileTarget(t, "  a: {limit: 1}\n  b: {limit: 1}\n")
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan string, 32)
	for _, order := range [][]string{{"a", "b"}, {"b", "a"}} {
		wg.Go(func() {
			for range 8 {
				c := exec.CommandContext(ctx, tg.bin, append(tg.global(), "run", "--resource", order[0], "--resource", order[1],
					"--if-busy", "wait", "--", "sleep", "0.01")...)
				c.Env = cleanEnv()
				if out, err := c.CombinedOutput(); err != nil {
					errs <- fmt.Sprintf("%v: %v: %s", order, err, out)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// 20 concurrent runs appending to one record file: 20 valid lines.
func TestRunConcurrentRecords(t *testing.T) {
	tg := fileTarget(t, "")
	rec := filepath.Join(t.TempDir(), "runs.jsonl")
	var wg sync.WaitGroup
	codes := make([]int, 20)
	for i := range codes {
		wg.Go(func() {
			codes[i], _, _ = tg.run(t, "run", "--resource", "wide", "--limit", "20", "--record", rec, "--", "true")
		})
	}
	wg.Wait()
	ids := map[string]bool{}
	for _, r := range recordtest.Ends(t, rec) {
		if r.Outcome != runner.OutcomeRan || r.ExitCode != 0 {
			t.Errorf("record %+v", r)
		}
		ids[r.ID] = true
	}
	if len(ids) != 20 {
		t.Fatalf("%d distinct records, want 20 (exit codes %v)", len(ids), codes)
	}
}

// While waiting with stderr on a terminal, one status line is rewritten in
// place; with stderr not a terminal, nothing of it is printed.
func TestRunStatusLine(t *testing.T) {
	tg := fileTarget(t, "")
	g := tg.governor(t)
	// One hold of history, for the expected wait.
	l := leasetest.HoldHeavy(t, g)
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	l = leasetest.HoldHeavy(t, g)
	master, slave := openPTY(t)
	c := tg.command("run", "--resource", "heavy", "--if-busy", "wait", "--", "true")
	c.Stderr = slave
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	seen := readTerminal(master)
	eventually(t, 10*time.Second, "no status line on the terminal", func() bool {
		// "~1s (from the last 1 hold)", or "any moment (holders past
		// the mean hold of 5ms, from the last 1 hold)" once the holder
		// has held longer than the earlier hold.
		return strings.Contains(seen(), "\r\x1b[Kgovernor: waiting for heavy, 1st in queue, expected wait ") &&
			strings.Contains(seen(), "from the last 1 hold), 1 of 1 in use; held by test-holder")
	})
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if err := c.Wait(); err != nil {
		t.Fatalf("run: %v; terminal %q", err, seen())
	}

	// Not a terminal: silent.
	l = leasetest.HoldHeavy(t, g)
	c = tg.command("run", "--resource", "heavy", "--if-busy", "wait", "--", "true")
	errb := startQueued(t, tg, g, c)
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if err := c.Wait(); err != nil || errb.Len() != 0 {
		t.Fatalf("run: %v; stderr %q, want nothing", err, errb)
	}
}

// TERM is forwarded to the tree, which may handle it; INT too, and a
// second INT kills the tree.
func TestRunForwardsSignals(t *testing.T) {
	tg := fileTarget(t, "")
	for _, tc := range []struct {
		name   string
		script string
		sigs   []syscall.Signal
		code   int
	}{
		{"TERM handled", `trap 'exit 7' TERM; echo ready; while :; do sleep 0.05; done`, []syscall.Signal{syscall.SIGTERM}, 7},
		{"HUP", `echo ready; sleep 30`, []syscall.Signal{syscall.SIGHUP}, 128 + 1},
		{"second INT kills", `trap '' INT; echo ready; while :; do sleep 0.05; done`, []syscall.Signal{syscall.SIGINT, syscall.SIGINT}, 128 + 9},
	} {
		c := tg.command("run", "--resource", "heavy", "--", "sh", "-c", tc.script)
		var errb bytes.Buffer
		c.Stderr = &errb
		out, err := c.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
			t.Fatalf("%s: the command did not start: %v", tc.name, err)
		}
		for i, s := range tc.sigs {
			if i > 0 {
				pause := time.NewTimer(200 * time.Millisecond) // the first must have been ignored
				<-pause.C
			}
			if err := c.Process.Signal(s); err != nil {
				t.Fatal(err)
			}
		}
		err = c.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != tc.code {
			t.Errorf("%s: %v, want exit %d; stderr %s", tc.name, err, tc.code, &errb)
		}
	}
}

// When the command's leader exits, descendants it left behind are stopped
// before the slot is released.
func TestRunStopsLeftovers(t *testing.T) {
	tg := fileTarget(t, "")
	marker := proctest.NewMarker(t, "govrun")
	sleep := proctest.MarkedSleep(t, marker)
	t.Cleanup(func() { proctest.KillMarked(marker) })
	code, _, errs := tg.run(t, "run", "--resource", "heavy", "--kill-grace", "300ms", "--",
		"sh", "-c", `setsid "$0" 60 & "$0" 60 & exit 5`, sleep)
	if code != 5 {
		t.Fatalf("exit %d, want 5; stderr %s", code, errs)
	}
	if left := proctest.Marked(sleep + "\x0060\x00"); len(left) != 0 {
		t.Fatalf("left behind: %v", left)
	}
}

// If the watchdog dies, its pid no longer proves the leases alive: the
// tree is stopped and governor exits 122.
func TestRunWatchdogDeath(t *testing.T) {
	tg := fileTarget(t, "")
	c := tg.command("run", "--resource", "heavy", "--kill-grace", "200ms", "--", "sleep", "30")
	var errb bytes.Buffer
	c.Stderr = &errb
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	g := tg.governor(t)
	holder := tg.soleHolder(t, g, "heavy", 10*time.Second, "the run did not acquire").PID
	b, err := os.ReadFile("/proc/" + strconv.Itoa(holder) + "/cmdline")
	if err != nil || !bytes.Contains(b, []byte("run\x00--watchdog\x00")) {
		t.Fatalf("the declared holder pid %d is not the watchdog: %q, %v", holder, b, err)
	}
	if err := syscall.Kill(holder, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err = c.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 122 || !strings.Contains(errb.String(), "watchdog") {
		t.Fatalf("%v, want exit 122; stderr %s", err, &errb)
	}
}

func TestRunBackendUnreachable(t *testing.T) {
	port, err := redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	tg := &target{bin: governorBin(t), redisURL: "redis://127.0.0.1:" + strconv.Itoa(port) + "/0", config: writeRunConfig(t, "")}
	rec := filepath.Join(t.TempDir(), "runs.jsonl")
	code, _, errs := tg.run(t, "run", "--resource", "heavy", "--record", rec, "--", "true")
	if code != 125 || !strings.Contains(errs, "cannot reach Redis") {
		t.Fatalf("exit %d, want 125; stderr %s", code, errs)
	}
	if r := recordtest.Ends(t, rec); len(r) != 1 || r[0].Outcome != runner.OutcomeError {
		t.Fatalf("records %+v", r)
	}
}
