package runner

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/governor-dev/governor/governor/supervise"
)

// watchdogDone is what Run writes on the pipe once the tree is gone and
// the leases released: the watchdog then exits without killing anything.
const watchdogDone = "done\n"

// watchdog is the process that kills the run's tree if governor dies.
type watchdog struct {
	cmd    *exec.Cmd
	pipe   *os.File // the write end; governor's death closes it
	exited chan struct{}
}

// startWatchdog runs argv with id appended, the read end of a pipe as
// descriptor 3, in its own process group (a terminal's ^C is for
// governor, which forwards it), with no parent-death signal: it must
// outlive governor.
func startWatchdog(argv []string, id string, env []string, stderr io.Writer) (*watchdog, error) {
	r, w, err := os.Pipe() // both ends close-on-exec: the tree never holds them
	if err != nil {
		return nil, fmt.Errorf("watchdog pipe: %w", err)
	}
	cmd := exec.Command(argv[0], append(append([]string(nil), argv[1:]...), id)...)
	cmd.Env = env
	cmd.ExtraFiles = []*os.File{r}
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	r.Close()
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("cannot start the watchdog %s: %w", argv[0], err)
	}
	wd := &watchdog{cmd: cmd, pipe: w, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(wd.exited)
	}()
	return wd, nil
}

func (w *watchdog) pid() int { return w.cmd.Process.Pid }

// finish ends the watchdog once nothing is left to guard (the tree is
// gone, the leases released). It is told "done" and killed too: a
// watchdog still starting up (a short command) would otherwise hold
// governor's exit until its runtime was up only to read "done". The kill
// goes through the watchdog's unreaped child pid, so it cannot reach
// another process.
func (w *watchdog) finish() {
	_, _ = io.WriteString(w.pipe, watchdogDone)
	w.pipe.Close()
	_ = w.cmd.Process.Kill()
	t := time.NewTimer(2 * time.Second)
	defer t.Stop()
	select {
	case <-w.exited:
	case <-t.C:
	}
}

// cgroupName is the name of the cgroup of run id's tree (see
// supervise.Options.Cgroup).
func cgroupName(id string) string { return "governor-run-" + id }

// sweepBudget bounds how long a watchdog keeps killing: a process in
// uninterruptible sleep may never die.
const sweepBudget = 30 * time.Second

// Watchdog is the body of the watchdog process that Run starts (`governor
// run --watchdog ID`): it reads pipe (descriptor 3 of that process) until
// Run writes "done", and exits 0. If the pipe reaches end of file first,
// governor has died — SIGKILL included — and Watchdog SIGKILLs, under
// its identity (pid and start time, proc.Kill), every process whose
// initial environment lists id in GOVERNOR_RUN_IDS, until two scans in a
// row find none; it reports what it did on stderr. The pipe, whose write
// end only governor holds (close-on-exec), is how the watchdog learns of
// governor's death on every system: its end of file is the same event as
// a kqueue NOTE_EXIT on governor's pid would be on macOS, with no pid to
// be reused meanwhile. SIGTERM makes it sweep
// at once; INT, HUP and QUIT are ignored. It returns the exit code for
// the process: 0, or 125 on bad arguments or an incomplete sweep.
func Watchdog(id string, pipe *os.File, stderr io.Writer) int {
	if id == "" || strings.ContainsAny(id, " \t\n") {
		fmt.Fprintf(stderr, "governor: watchdog: run id %q: expected the id Run passes\n", id)
		return ExitFailure
	}
	signal.Ignore(syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT)
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	defer signal.Stop(term)

	read := make(chan bool, 1) // true: "done" was read
	go func() {
		var got []byte
		buf := make([]byte, 64)
		for {
			n, err := pipe.Read(buf)
			got = append(got, buf[:n]...)
			if strings.Contains(string(got), watchdogDone) {
				read <- true
				return
			}
			if err != nil {
				read <- false
				return
			}
		}
	}()
	why := "governor exited without releasing"
	select {
	case done := <-read:
		if done {
			return ExitOK
		}
	case <-term:
		why = "the watchdog got SIGTERM"
	}
	// The tree's own cgroup, where it has one, goes first and whole: it
	// holds the processes the marker sweep cannot find.
	cg, hasCgroup := supervise.ChildCgroup(cgroupName(id))
	if hasCgroup {
		if err := supervise.KillCgroup(cg); err != nil {
			fmt.Fprintf(stderr, "governor: watchdog of run %s: killing cgroup %s: %v\n", id, cg, err)
		}
	}
	killed, err := sweep(id)
	if hasCgroup {
		if rerr := supervise.RemoveCgroup(cg, sweepBudget); rerr != nil && err == nil {
			err = rerr
		}
	}
	if killed > 0 {
		fmt.Fprintf(stderr, "governor: watchdog of run %s: %s; killed %d processes of its command\n", id, why, killed)
	}
	if err != nil {
		fmt.Fprintf(stderr, "governor: watchdog of run %s: %v\n", id, err)
		return ExitFailure
	}
	return ExitOK
}

// sweep kills the processes marked with id until two scans in a row find
// none, or sweepBudget has passed.
func sweep(id string) (int, error) {
	deadline := time.Now().Add(sweepBudget)
	killed, quiet := 0, 0
	pause := time.NewTimer(0)
	defer pause.Stop()
	<-pause.C
	for quiet < 2 {
		n, err := killMarked(id)
		if err != nil {
			return killed, err
		}
		killed += n
		if n == 0 {
			quiet++
		} else {
			quiet = 0
		}
		if time.Now().After(deadline) {
			return killed, errors.New("processes of the command were still running after " + sweepBudget.String())
		}
		pause.Reset(10 * time.Millisecond)
		<-pause.C
	}
	return killed, nil
}
