package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
)

// With no run.max_concurrent_runs configured, a plain `governor run --
// CMD` runs (it used to exit 125): it holds the run lock and the three
// join slots of the default 4.
func TestRunPlainExecRunByDefault(t *testing.T) {
	tg := fileTarget(t, "")
	code, out, errs := tg.run(t, "run", "--", "sh", "-c", `echo "$GOVERNOR_HELD"`)
	if code != 0 {
		t.Fatalf("exit %d, stderr %s; want 0", code, errs)
	}
	for _, want := range []string{runProject + "/run=", runProject + "/run:join="} {
		if !strings.Contains(out, want) {
			t.Errorf("GOVERNOR_HELD %q lacks %q", out, want)
		}
	}
}

// runUntilStopped starts `governor run FLAGS` of a command that touches
// started and runs until stop exists; it returns once the command has
// started. finish creates stop and waits for the run (once: the end of t
// calls it too) and returns how it ended.
func (tg *target) runUntilStopped(t *testing.T, what string, flags ...string) (started, stop string, finish func() error) {
	t.Helper()
	dir := t.TempDir()
	started, stop = filepath.Join(dir, "started"), filepath.Join(dir, "stop")
	args := append(append([]string{"run"}, flags...), "--", "sh", "-c", `touch "$0"; while [ ! -e "$1" ]; do sleep 0.05; done`, started, stop)
	c := tg.command(args...)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	finish = sync.OnceValue(func() error {
		os.WriteFile(stop, nil, 0o600)
		return c.Wait()
	})
	t.Cleanup(func() { finish() })
	eventually(t, 30*time.Second, what+" starts", func() bool { _, err := os.Stat(started); return err == nil })
	return started, stop, finish
}

// The exec-run rule: a plain run is busy while any other run, joined or
// not, is running; --shareable holds the lock and accepts joiners; --join
// runs beside a shareable run, on max_concurrent_runs-1 join slots, and
// --if-busy skip on a full set exits 75.
func TestRunExecRunsJoin(t *testing.T) {
	t.Parallel()
	runTargets(t, "run:\n  max_concurrent_runs: 3\n", func(t *testing.T, tg *target) {
		// A real shareable run, running until told to stop.
		started, stop, finish := tg.runUntilStopped(t, "the shareable run", "--shareable")

		if code, _, errs := tg.run(t, "run", "--", "true"); code != 73 || !strings.Contains(errs, "run is busy") {
			t.Errorf("plain run beside a shareable one: exit %d, stderr %s; want 73, run busy", code, errs)
		}
		if code, _, errs := tg.run(t, "run", "--shareable", "--", "true"); code != 73 {
			t.Errorf("second shareable run: exit %d, stderr %s; want 73", code, errs)
		}
		// A joiner runs while the shareable run is still running.
		code, _, errs := tg.run(t, "run", "--join", "--", "sh", "-c", `test -e "$0" && test ! -e "$1"`, started, stop)
		if code != 0 {
			t.Errorf("--join beside a shareable run: exit %d, stderr %s; want 0 (ran beside it)", code, errs)
		}

		// Both join slots taken: a third joiner is skipped (75), a plain
		// run still busy even with the lock free.
		g := tg.governor(t)
		ctx := context.Background()
		j, err := g.Acquire(ctx, "run:join", governor.AcquireOptions{Limit: 2, Weight: 2})
		if err != nil {
			t.Fatal(err)
		}
		if code, _, errs := tg.run(t, "run", "--join", "--if-busy", "skip", "--", "true"); code != 75 || !strings.Contains(errs, "run:join is busy") {
			t.Errorf("--join on full join slots, --if-busy skip: exit %d, stderr %s; want 75", code, errs)
		}
		if err := finish(); err != nil {
			t.Fatalf("shareable run: %v", err)
		}
		if code, _, errs := tg.run(t, "run", "--", "true"); code != 73 || !strings.Contains(errs, "run:join is busy") {
			t.Errorf("plain run while joiners run (lock free): exit %d, stderr %s; want 73, run:join busy", code, errs)
		}
		j.Release()

		// A plain run holds every join slot: a joiner is busy beside it.
		h, err := g.Hold(ctx, governor.Ask{Wants: []governor.Want{{Resource: "run", AcquireOptions: governor.AcquireOptions{Limit: 1}},
			{Resource: "run:join", AcquireOptions: governor.AcquireOptions{Limit: 2, Weight: 2}}}})
		if err != nil {
			t.Fatal(err)
		}
		l := h.Leases
		if code, _, errs := tg.run(t, "run", "--join", "--", "true"); code != 73 {
			t.Errorf("--join beside a plain run: exit %d, stderr %s; want 73", code, errs)
		}
		for _, x := range l {
			x.Release()
		}
		for _, r := range []string{"run", "run:join"} {
			if st := tg.status(t, g, r); st.Used != 0 || len(st.Waiters) != 0 {
				t.Errorf("%s: state left behind: %+v", r, st)
			}
		}
	})
}

// A plain run and joiners racing, all waiting: a plain run's command never
// overlaps a joiner's, and every run gets its turn.
func TestRunPlainNeverOverlapsJoiners(t *testing.T) {
	t.Parallel()
	tg := fileTarget(t, "run:\n  max_concurrent_runs: 3\n")
	times := filepath.Join(t.TempDir(), "times")
	script := `echo "$0 S $(date +%s%N)" >> "$1"; sleep 0.2; echo "$0 E $(date +%s%N)" >> "$1"`
	kinds := []string{"plain", "join", "plain", "join", "join"}
	codes := make([]int, len(kinds))
	done := make(chan struct{}, len(kinds))
	for i, k := range kinds {
		go func() {
			args := []string{"run", "--if-busy", "wait"}
			if k == "join" {
				args = append(args, "--join")
			}
			codes[i], _, _ = tg.run(t, append(args, "--", "sh", "-c", script, k+"-"+string(rune('a'+i)), times)...)
			done <- struct{}{}
		}()
	}
	for range kinds {
		<-done
	}
	for i, c := range codes {
		if c != 0 {
			t.Fatalf("run %d (%s): exit %d", i, kinds[i], c)
		}
	}
	spans := readSpans(t, times)
	if len(spans) != len(kinds) {
		t.Fatalf("%d runs wrote times, want %d", len(spans), len(kinds))
	}
	for a, sa := range spans {
		for b, sb := range spans {
			if a < b && (strings.HasPrefix(a, "plain") || strings.HasPrefix(b, "plain")) && sa.s < sb.e && sb.s < sa.e {
				t.Errorf("%s %v overlaps %s %v", a, sa, b, sb)
			}
		}
	}
}

// With max_concurrent_runs 1 there are no join slots: --join is refused
// with a clear error, and a plain run holds the lock alone.
func TestRunJoinRefusedAtOneRun(t *testing.T) {
	tg := fileTarget(t, "run:\n  max_concurrent_runs: 1\n")
	code, _, errs := tg.run(t, "run", "--join", "--", "true")
	if code != 125 || !strings.Contains(errs, "--join: run.max_concurrent_runs is 1") {
		t.Errorf("--join at max 1: exit %d, stderr %s; want 125 naming run.max_concurrent_runs", code, errs)
	}
	if code, out, errs := tg.run(t, "run", "--", "sh", "-c", `echo "$GOVERNOR_HELD"`); code != 0 || strings.Contains(out, "run:join") {
		t.Errorf("plain run at max 1: exit %d, stdout %q, stderr %s", code, out, errs)
	}
	if code, _, errs := tg.run(t, "run", "--join", "--shareable", "--", "true"); code != 125 || !strings.Contains(errs, "drop one of them") {
		t.Errorf("--join --shareable: exit %d, stderr %s; want 125", code, errs)
	}
}

// slots --project P shows the run lock, the join slots and provider slots
// with their use, limit and holders, and acquires nothing.
func TestSlotsShowsExecRuns(t *testing.T) {
	tg := fileTarget(t, "providers:\n  anthropic: {max_concurrency: 2}\n")
	g := tg.governor(t)
	j, err := g.Acquire(context.Background(), "run:join", governor.AcquireOptions{Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Release()
	code, out, errs := tg.run(t, "--project", runProject, "slots")
	if code != 0 {
		t.Fatalf("slots: exit %d, stderr %s", code, errs)
	}
	for _, want := range []string{"run  limit 1  in use 0  free 1", "run:join  limit 3  in use 1  free 2", "provider:anthropic  limit 2  in use 0", j.ID(), "test-holder"} {
		if !strings.Contains(out, want) {
			t.Errorf("slots output lacks %q:\n%s", want, out)
		}
	}
	if st := tg.status(t, g, "run"); st.Used != 0 || len(st.Holders) != 0 {
		t.Errorf("slots acquired something: %+v", st)
	}
}

type span struct{ s, e int64 }

// readSpans reads "NAME S|E NANOS" lines.
func readSpans(t *testing.T, path string) map[string]span {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]span{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			t.Fatalf("bad line %q", line)
		}
		var ns int64
		for _, c := range f[2] {
			ns = ns*10 + int64(c-'0')
		}
		s := out[f[0]]
		if f[1] == "S" {
			s.s = ns
		} else {
			s.e = ns
		}
		out[f[0]] = s
	}
	return out
}

// An exec run inside an exec run is part of it: a plain run inside a
// joiner takes neither the run lock (held by a shareable run, or by a
// plain run waiting for this very joiner: a deadlock) nor a join slot.
func TestRunExecRunInsideExecRun(t *testing.T) {
	tg := fileTarget(t, "")
	g := tg.governor(t)
	l, err := g.Acquire(context.Background(), "run", governor.AcquireOptions{Limit: 1}) // a shareable run
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	inner := append(append([]string{tg.bin}, tg.global()...), "run", "--", "sh", "-c", `echo "inner $GOVERNOR_HELD"`)
	code, out, errs := tg.run(t, append([]string{"run", "--join", "--"}, inner...)...)
	if code != 0 || !strings.Contains(out, "inner "+runProject+"/run:join=") || strings.Contains(out, runProject+"/run=") {
		t.Errorf("plain run inside a joiner: exit %d, stdout %q, stderr %s; want 0, holding only the outer join slot", code, out, errs)
	}
}

// A plain run holds every join slot in force (issue 24.9): under a live
// limit below the configured one it is not too heavy (it used to exit
// 125), and under one above it no --join runs beside it.
func TestRunPlainUnderLiveJoinLimit(t *testing.T) {
	t.Parallel()
	runTargets(t, "run:\n  max_concurrent_runs: 3\n", func(t *testing.T, tg *target) {
		if code, _, errs := tg.run(t, "limit", "run:join", "1"); code != 0 {
			t.Fatalf("limit run:join 1: exit %d, stderr %s", code, errs)
		}
		if code, _, errs := tg.run(t, "run", "--", "true"); code != 0 {
			t.Fatalf("plain run under live run:join 1: exit %d, stderr %s; want 0", code, errs)
		}
		if code, _, errs := tg.run(t, "limit", "run:join", "5"); code != 0 {
			t.Fatalf("limit run:join 5: exit %d, stderr %s", code, errs)
		}
		tg.runUntilStopped(t, "the plain run")
		if code, _, errs := tg.run(t, "run", "--join", "--", "true"); code != 73 {
			t.Errorf("--join beside a plain run under live run:join 5: exit %d, stderr %s; want 73", code, errs)
		}
	})
}
