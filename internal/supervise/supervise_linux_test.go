//go:build linux

package supervise_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/governor-dev/governor/governor/proc"
	"github.com/governor-dev/governor/internal/proctest"
	"github.com/governor-dev/governor/internal/supervise"
)

// Generous deadlines: the machine may be loaded; only upper bounds are
// asserted, never how fast something happens.
const (
	deadline  = 20 * time.Second
	testGrace = 300 * time.Millisecond
)

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	limit := time.NewTimer(deadline)
	defer limit.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case <-limit.C:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// sh runs script under /bin/sh -c with $0 = marker and the given
// positional parameters, and SLEEP set to a marked sleep(1).
func sh(t *testing.T, marker, script string, params ...string) supervise.Options {
	t.Helper()
	t.Cleanup(func() { proctest.KillMarked(marker) })
	return supervise.Options{
		Args:      append([]string{"/bin/sh", "-c", script, marker}, params...),
		Env:       append(os.Environ(), "SLEEP="+proctest.MarkedSleep(t, marker)),
		KillGrace: testGrace,
		NoCgroup:  scansOnly,
	}
}

// scansOnly makes sh's trees go without a cgroup, as where none can be
// made; eachWay sets it.
var scansOnly bool

// eachWay runs fn with the tree in its own cgroup (where this machine
// allows one), with /proc scans alone, and on the portable path that
// macOS takes (proc.PortableEnv: no cgroup, pidfd, subreaper or
// parent-death signal).
func eachWay(t *testing.T, fn func(t *testing.T)) {
	if proc.Portable() {
		fn(t) // the whole run is on the portable path
		return
	}
	t.Run("cgroup", fn)
	t.Run("scans-only", func(t *testing.T) {
		scansOnly = true
		defer func() { scansOnly = false }()
		fn(t)
	})
	t.Run("portable", func(t *testing.T) {
		t.Setenv(proc.PortableEnv, "1")
		fn(t)
	})
}

func start(t *testing.T, opts supervise.Options) *supervise.Tree {
	t.Helper()
	tr, err := supervise.Start(opts)
	if err != nil {
		t.Fatalf("Start(%q): %v", opts.Args, err)
	}
	t.Cleanup(func() {
		// Bounded, so that a failing test does not hang the run.
		stopped := make(chan struct{})
		go func() {
			tr.Stop(errors.New("test cleanup"))
			close(stopped)
		}()
		select {
		case <-stopped:
		case <-time.After(deadline):
		}
	})
	return tr
}

// stop calls Stop and fails the test if it does not return in time: a
// process it cannot find would otherwise make it retry forever.
func stop(t *testing.T, tr *supervise.Tree, reason error) {
	t.Helper()
	c := make(chan struct{})
	go func() {
		tr.Stop(reason)
		close(c)
	}()
	limit := time.NewTimer(deadline)
	defer limit.Stop()
	select {
	case <-c:
	case <-limit.C:
		t.Fatal("Stop did not return")
	}
}

func wait(t *testing.T, tr *supervise.Tree) supervise.Exit {
	t.Helper()
	type result struct {
		e   supervise.Exit
		err error
	}
	c := make(chan result, 1)
	go func() {
		e, err := tr.Wait()
		c <- result{e, err}
	}()
	limit := time.NewTimer(deadline)
	defer limit.Stop()
	select {
	case r := <-c:
		if r.err != nil {
			t.Fatalf("Wait: %v", r.err)
		}
		return r.e
	case <-limit.C:
		t.Fatal("Wait did not return")
	}
	panic("unreachable")
}

func TestExitStatusPassthrough(t *testing.T) {
	eachWay(t, testExitStatusPassthrough)
}

func testExitStatusPassthrough(t *testing.T) {
	tests := []struct {
		script string
		want   supervise.Exit
		code   int
	}{
		{"exit 0", supervise.Exit{}, 0},
		{"exit 3", supervise.Exit{Code: 3}, 3},
		{"kill -9 $$", supervise.Exit{Signal: syscall.SIGKILL}, 137},
		{"kill -TERM $$", supervise.Exit{Signal: syscall.SIGTERM}, 143},
	}
	for _, tt := range tests {
		t.Run(tt.script, func(t *testing.T) {
			tr := start(t, sh(t, proctest.NewMarker(t, "govsup"), tt.script))
			e := wait(t, tr)
			if e != tt.want || supervise.ExitCode(e) != tt.code {
				t.Errorf("got %+v (code %d), want %+v (code %d)", e, supervise.ExitCode(e), tt.want, tt.code)
			}
			select {
			case <-tr.Done():
			default:
				t.Error("Done not closed after Wait")
			}
			if err := tr.Signal(syscall.SIGTERM); !errors.Is(err, supervise.ErrFinished) {
				t.Errorf("Signal after Wait = %v, want ErrFinished", err)
			}
		})
	}
}

func TestStartErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	noExec := write("noexec", "#!/bin/sh\nexit 0\n", 0o644)
	badInterp := write("badinterp", "#!/nonexistent/interpreter\n", 0o755)
	garbage := write("garbage", "\x7fELF not really\x00\x01\x02", 0o755)
	write("onlyhere", "#!/bin/sh\n", 0o644)
	ok := write("ok", "#!/bin/sh\nexit 4\n", 0o755)

	tests := []struct {
		name string
		opts supervise.Options
		want error
	}{
		{"no args", supervise.Options{}, supervise.ErrNotFound},
		{"not in PATH", supervise.Options{Args: []string{"no-such-command-" + proctest.NewMarker(t, "govsup")}}, supervise.ErrNotFound},
		{"missing path", supervise.Options{Args: []string{filepath.Join(dir, "missing")}}, supervise.ErrNotFound},
		{"missing relative to Dir", supervise.Options{Args: []string{"./missing"}, Dir: dir}, supervise.ErrNotFound},
		{"no exec bit", supervise.Options{Args: []string{noExec}}, supervise.ErrNotExecutable},
		{"directory", supervise.Options{Args: []string{dir}}, supervise.ErrNotExecutable},
		{"bad interpreter", supervise.Options{Args: []string{badInterp}}, supervise.ErrNotExecutable},
		{"exec format error", supervise.Options{Args: []string{garbage}}, supervise.ErrNotExecutable},
		{"found in PATH but not executable", supervise.Options{
			Args: []string{"onlyhere"}, Env: []string{"PATH=" + dir},
		}, supervise.ErrNotExecutable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := supervise.Start(tt.opts)
			if !errors.Is(err, tt.want) {
				if tr != nil {
					tr.Stop(nil)
				}
				t.Fatalf("Start = %v, want %v", err, tt.want)
			}
			if tr != nil {
				t.Fatal("Start returned a tree with an error")
			}
		})
	}

	// A relative name resolves against Dir, where the child runs.
	tr := start(t, supervise.Options{Args: []string{"./" + filepath.Base(ok)}, Dir: dir})
	if e := wait(t, tr); e.Code != 4 {
		t.Errorf("./ok in Dir: got %+v, want code 4", e)
	}
}

// A tree that ignores TERM and keeps spawning children, some of them in new
// sessions: after Stop nothing of it is left, within grace plus slack.
func TestStopKillsSpawningTreeThatIgnoresTerm(t *testing.T) {
	eachWay(t, func(t *testing.T) {
		marker := proctest.NewMarker(t, "govsup")
		tr := start(t, sh(t, marker, `
			trap '' TERM
			while :; do
				"$SLEEP" 1000 &
				setsid "$SLEEP" 1000 &
				(setsid "$SLEEP" 1000 &)
				"$SLEEP" 0.02
			done`))
		waitFor(t, "a growing tree", func() bool { return len(proctest.Marked(marker)) >= 10 })

		stop(t, tr, nil) // returns within grace + a generous slack

		if left := proctest.Marked(marker); len(left) != 0 {
			t.Fatalf("processes left after Stop: %v", left)
		}
		e := wait(t, tr)
		if e.Signal != syscall.SIGKILL || !errors.Is(e.Stopped, supervise.ErrStopped) {
			t.Errorf("Exit = %+v, want killed by SIGKILL and stopped", e)
		}
	})
}

// Descendants that left the process group with setsid, as a child of the
// leader and as a double-forked orphan re-parented to the supervisor, are
// stopped too; a process the test started itself, and another tree, are not.
func TestStopKillsSetsidDescendantsOnly(t *testing.T) {
	eachWay(t, func(t *testing.T) {
		marker := proctest.NewMarker(t, "govsup")
		sentinelMarker := proctest.NewMarker(t, "govsup")
		sentinel := exec.Command(proctest.MarkedSleep(t, sentinelMarker), "1000")
		if err := sentinel.Start(); err != nil {
			t.Fatal(err)
		}
		defer sentinel.Process.Kill()

		otherMarker := proctest.NewMarker(t, "govsup")
		other := start(t, sh(t, otherMarker, `(setsid "$SLEEP" 1000 &); exec "$SLEEP" 1000`))

		tr := start(t, sh(t, marker, `
			setsid "$SLEEP" 1000 &
			(setsid "$SLEEP" 1000 &)
			"$SLEEP" 1000`))
		// Three sleeps, two of them in sessions of their own; two of the other.
		waitFor(t, "the trees", func() bool {
			sleeps, outside := proctest.Marked("sleep-"+marker), 0
			for _, pid := range sleeps {
				if sid, _ := unix.Getsid(pid); sid == pid {
					outside++
				}
			}
			return len(sleeps) == 3 && outside == 2 && len(proctest.Marked("sleep-"+otherMarker)) == 2
		})

		stop(t, tr, errors.New("timeout"))
		if left := proctest.Marked(marker); len(left) != 0 {
			t.Fatalf("processes left after Stop: %v", left)
		}
		e := wait(t, tr)
		if e.Stopped == nil || e.Stopped.Error() != "timeout" || supervise.ExitCode(e) != 143 {
			t.Errorf("Exit = %+v (code %d), want stopped by timeout, killed by TERM", e, supervise.ExitCode(e))
		}

		if len(proctest.Marked(sentinelMarker)) != 1 {
			t.Fatal("the sentinel process did not survive Stop")
		}
		if len(proctest.Marked("sleep-"+otherMarker)) != 2 {
			t.Fatal("the other tree did not survive Stop")
		}
		select {
		case <-other.Done():
			t.Fatal("the other tree's leader exited")
		default:
		}
		// The sentinel's exit status was not stolen by the supervisor.
		sentinel.Process.Kill()
		err := sentinel.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Errorf("sentinel Wait = %v, want killed by SIGKILL", err)
		}

		stop(t, other, nil)
		if left := proctest.Marked(otherMarker); len(left) != 0 {
			t.Fatalf("processes of the other tree left: %v", left)
		}
	})
}

func TestSignalReachesGroupAndSetsidDescendants(t *testing.T) {
	eachWay(t, func(t *testing.T) {
		marker := proctest.NewMarker(t, "govsup")
		dir := t.TempDir()
		got, got2 := filepath.Join(dir, "got"), filepath.Join(dir, "got2")
		ready, ready2 := filepath.Join(dir, "ready"), filepath.Join(dir, "ready2")
		tr := start(t, sh(t, marker, `
			setsid /bin/sh -c 'trap "echo got2 > $1; exit 0" TERM; echo > $2; while :; do "$SLEEP" 0.05; done' "$0" "$3" "$4" &
			trap 'echo got > "$1"; exit 0' TERM
			echo > "$2"
			while :; do "$SLEEP" 0.05; done`, got, ready, got2, ready2))
		waitFor(t, "traps", func() bool {
			_, err1 := os.Stat(ready)
			_, err2 := os.Stat(ready2)
			return err1 == nil && err2 == nil
		})
		if err := tr.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		e := wait(t, tr)
		if e != (supervise.Exit{}) {
			t.Errorf("Exit = %+v, want code 0", e)
		}
		for _, f := range []string{got, got2} {
			if b, err := os.ReadFile(f); err != nil || !strings.HasPrefix(string(b), "got") {
				t.Errorf("%s: %q, %v", f, b, err)
			}
		}
	})
}

// Wait waits for descendants the leader left behind, also orphans that were
// re-parented to the supervisor; Done does not.
func TestWaitWaitsForLingeringDescendants(t *testing.T) {
	eachWay(t, func(t *testing.T) {
		marker := proctest.NewMarker(t, "govsup")
		// The orphan outlives the rest, so a Wait that did not wait for it would
		// return while it still runs.
		tr := start(t, sh(t, marker, `(setsid "$SLEEP" 0.8 &); "$SLEEP" 0.1 & exit 5`))
		select {
		case <-tr.Done():
		case <-time.After(deadline):
			t.Fatal("Done not closed")
		}
		e := wait(t, tr)
		if e.Code != 5 || e.Stopped != nil {
			t.Errorf("Exit = %+v, want code 5, not stopped", e)
		}
		if left := proctest.Marked(marker); len(left) != 0 {
			t.Fatalf("Wait returned with processes left: %v", left)
		}
	})
}

// Stop after the leader exited ends the rest, and the exit is the leader's.
// Until then the leader stays an unreaped zombie, which keeps the process
// group id from being reused while the group is signalled.
func TestStopAfterLeaderExited(t *testing.T) {
	eachWay(t, func(t *testing.T) {
		marker := proctest.NewMarker(t, "govsup")
		tr := start(t, sh(t, marker, `(setsid "$SLEEP" 1000 &); "$SLEEP" 1000 & exit 7`))
		<-tr.Done()
		waitFor(t, "the leftovers", func() bool { return len(proctest.Marked("sleep-"+marker)) == 2 })
		b, err := os.ReadFile("/proc/" + strconv.Itoa(tr.Members()[0].PID) + "/stat")
		if i := bytes.LastIndexByte(b, ')'); err != nil || i < 0 || i+2 >= len(b) || b[i+2] != 'Z' {
			t.Fatalf("leader %d should be an unreaped zombie: %q, %v", tr.Members()[0].PID, b, err)
		}
		stop(t, tr, nil)
		if left := proctest.Marked(marker); len(left) != 0 {
			t.Fatalf("processes left after Stop: %v", left)
		}
		if e := wait(t, tr); e.Code != 7 || e.Stopped != nil {
			t.Errorf("Exit = %+v, want code 7, not stopped", e)
		}
	})
}

func TestStdioAndExtraFiles(t *testing.T) {
	eachWay(t, testStdioAndExtraFiles)
}

func testStdioAndExtraFiles(t *testing.T) {
	lock, err := os.CreateTemp(t.TempDir(), "lease")
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	var out bytes.Buffer
	tr := start(t, supervise.Options{
		Args:       []string{"/bin/sh", "-c", `cat; readlink /proc/self/fd/3; echo err >&2`},
		Stdin:      strings.NewReader("hello\n"),
		Stdout:     &out,
		Stderr:     &out, // one pipe shared, as in os/exec
		ExtraFiles: []*os.File{lock},
	})
	wait(t, tr)
	want := "hello\n" + lock.Name() + "\nerr\n"
	if out.String() != want {
		t.Errorf("output %q, want %q", out.String(), want)
	}
}

// TestHelperTree is not a test: TestPdeathsig runs the test binary with it
// to start a tree in a process that the test then SIGKILLs.
func TestHelperTree(t *testing.T) {
	marker := os.Getenv("SUPERVISE_HELPER_MARKER")
	if marker == "" {
		t.Skip("helper process for TestPdeathsig")
	}
	tr, err := supervise.Start(supervise.Options{
		Args: []string{os.Getenv("SUPERVISE_HELPER_SLEEP"), "1000"},
	})
	if err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString(strconv.Itoa(tr.Members()[0].PID) + "\n")
	time.Sleep(deadline) // killed long before
}

// The direct child dies with a SIGKILLed supervisor. (Its own children are
// not covered by Pdeathsig; a caller uses a lock file in ExtraFiles.)
func TestPdeathsig(t *testing.T) {
	if proc.Portable() {
		t.Skip("no parent-death signal on the portable path (" + proc.PortableEnv + "=1)")
	}
	marker := proctest.NewMarker(t, "govsup")
	t.Cleanup(func() { proctest.KillMarked(marker) })
	helper := exec.Command(os.Args[0], "-test.run=^TestHelperTree$", "-test.count=1")
	helper.Env = append(os.Environ(),
		"SUPERVISE_HELPER_MARKER="+marker,
		"SUPERVISE_HELPER_SLEEP="+proctest.MarkedSleep(t, marker))
	stdout, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	defer helper.Process.Kill()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the helper's child pid: %v", err)
	}
	child, _ := strconv.Atoi(strings.TrimSpace(line))
	// The child has exec'd (ForkExec returns after), but its command
	// line, which Marked reads, is set by the kernel a moment later:
	// read at once under load it was empty (a CI run, "marked processes
	// [], want [16014]").
	waitFor(t, fmt.Sprintf("the child %d to be the marked process", child), func() bool {
		got := proctest.Marked(marker)
		return len(got) == 1 && got[0] == child
	})
	if err := helper.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = helper.Wait()
	waitFor(t, "the child to die with its supervisor", func() bool { return len(proctest.Marked(marker)) == 0 })
}

// Finished trees leave no goroutine behind (the package keeps one forker
// goroutine for the life of the process).
func TestNoGoroutineLeak(t *testing.T) {
	wait(t, start(t, sh(t, proctest.NewMarker(t, "govsup"), "exit 0"))) // the forker exists now
	before := runtime.NumGoroutine()
	for range 3 {
		marker := proctest.NewMarker(t, "govsup")
		tr := start(t, sh(t, marker, `(setsid "$SLEEP" 1000 &); "$SLEEP" 1000`))
		waitFor(t, "the tree", func() bool { return len(proctest.Marked("sleep-"+marker)) == 2 })
		stop(t, tr, nil)
		wait(t, tr)
	}
	waitFor(t, "goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
}
