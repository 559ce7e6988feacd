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

	"github.com/governor-dev/governor/governor/proc"
)

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

// send tells the watchdog the stop plan of the latest renewal. A
// watchdog that does not read (stopped itself) does not hold governor
// up: the write gives up after a moment, and the watchdog keeps the
// earlier plan, which is never later than this one.
func (w *watchdog) send(p stopPlan) {
	_ = w.pipe.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	_, _ = io.WriteString(w.pipe, p.message())
}

// finish ends the watchdog once nothing is left to guard (the tree is
// gone, the leases released). It is told "done" and killed too: a
// watchdog still starting up (a short command) would otherwise hold
// governor's exit until its runtime was up only to read "done". The kill
// goes through the watchdog's unreaped child pid, so it cannot reach
// another process.
func (w *watchdog) finish() {
	_, _ = io.WriteString(w.pipe, msgDone+"\n")
	w.pipe.Close()
	_ = w.cmd.Process.Kill()
	t := time.NewTimer(2 * time.Second)
	defer t.Stop()
	select {
	case <-w.exited:
	case <-t.C:
	}
}

// sweepBudget bounds how long a watchdog keeps killing: a process in
// uninterruptible sleep may never die.
const sweepBudget = 30 * time.Second

// Watchdog is the body of the watchdog process that Run starts (`governor
// run --watchdog ID`). It reads pipe (descriptor 3 of that process), a
// line at a time, until Run writes "done", and exits 0.
//
// After each renewal of the run's leases Run writes their stop plan,
// "deadline TERM KILL", as readings of proc.MachineClock. If no newer
// plan comes by TERM and governor is stopped (SIGSTOP: it cannot stop
// the tree itself) while its command works on, Watchdog sends TERM and
// CONT to every process whose initial environment lists id in
// GOVERNOR_RUN_IDS (a tree stopped with governor, Ctrl-Z, is left
// alone until KILL); by
// KILL (the leases' local deadline, before the backend could grant the
// slots elsewhere) it kills the run's cgroup, if any, and SIGKILLs those
// processes — whether governor is stopped or not — then waits for the
// pipe again.
//
// If the pipe reaches end of file first, governor has died — SIGKILL
// included — and Watchdog kills the run's cgroup, if any, and SIGKILLs,
// under its identity (pid and start time, proc.Kill), every process
// whose initial environment lists id in GOVERNOR_RUN_IDS, until two
// scans in a row find none; it reports what it did on stderr. The pipe,
// whose write end only governor holds (close-on-exec), is how the
// watchdog learns of governor's death on every system: its end of file
// is the same event as a kqueue NOTE_EXIT on governor's pid would be on
// macOS, with no pid to be reused meanwhile. SIGTERM makes it sweep at
// once; INT, HUP and QUIT are ignored. It returns the exit code for the
// process: 0, or 125 on bad arguments or an incomplete sweep.
func Watchdog(id string, pipe *os.File, stderr io.Writer) int {
	if id == "" || strings.ContainsAny(id, " \t\n") {
		fmt.Fprintf(stderr, "governor: watchdog: run id %q: expected the id Run passes\n", id)
		return ExitFailure
	}
	signal.Ignore(syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT)
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	defer signal.Stop(term)

	lines := make(chan string)
	ended := make(chan error, 1)
	go readLines(pipe, lines, ended)

	var plan machinePlan
	termed := false // TERM's instant of the current plan has passed
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	arm := func() {
		next := plan.kill
		if !termed {
			next = plan.term
		}
		timer.Reset(max(next-proc.MachineClock(), 0))
	}
	why := "governor exited without releasing"
wait:
	for {
		select {
		case line := <-lines:
			done, p, err := parseLine(line)
			switch {
			case err != nil:
				fmt.Fprintf(stderr, "governor: watchdog of run %s: %v\n", id, err)
			case done:
				return ExitOK
			default:
				plan, termed = p, false
				arm()
			}
		case <-ended:
			break wait
		case <-term:
			why = "the watchdog got SIGTERM"
			break wait
		case <-timer.C:
			if !termed && proc.MachineClock() < plan.kill {
				termed = true
				if governorStopped() {
					if n := termWorking(id); n > 0 {
						fmt.Fprintf(stderr, "governor: watchdog of run %s: governor (pid %d) is stopped and renewed no lease; sent TERM to %d processes of its command, KILL follows by the leases' deadline\n", id, os.Getppid(), n)
					}
				}
				arm()
				continue
			}
			killed, err := killTree(id)
			if killed > 0 || err != nil {
				fmt.Fprintf(stderr, "governor: watchdog of run %s: no lease renewal came by the leases' deadline; killed %d processes of its command%s\n", id, killed, errSuffix(err))
			}
		}
	}
	killed, err := killTree(id)
	if killed > 0 {
		fmt.Fprintf(stderr, "governor: watchdog of run %s: %s; killed %d processes of its command\n", id, why, killed)
	}
	if err != nil {
		fmt.Fprintf(stderr, "governor: watchdog of run %s: %v\n", id, err)
		return ExitFailure
	}
	return ExitOK
}

// killTree kills run id's cgroup, where it has one (it holds the
// processes the marker sweep cannot find), then sweeps the marked
// processes, and removes the cgroup.
func killTree(id string) (int, error) {
	cg, hasCgroup := proc.ChildCgroup(proc.RunCgroupName(id))
	var err error
	if hasCgroup {
		if kerr := proc.KillCgroup(cg); kerr != nil && !errors.Is(kerr, os.ErrNotExist) {
			err = fmt.Errorf("killing cgroup %s: %w", cg, kerr)
		}
	}
	killed, serr := sweep(id)
	if serr != nil && err == nil {
		err = serr
	}
	if hasCgroup {
		if rerr := proc.RemoveCgroup(cg, sweepBudget); rerr != nil && !errors.Is(rerr, os.ErrNotExist) && err == nil {
			err = rerr
		}
	}
	return killed, err
}

// governorStopped reports whether governor, the watchdog's parent, is
// stopped (it then renews nothing and stops no tree).
func governorStopped() bool {
	s, err := proc.Stat(os.Getppid())
	return err == nil && s.Stopped() && !s.Zombie()
}

// termWorking sends TERM and CONT to every process marked with id, each
// under its identity, unless every one of them is stopped (a job stop,
// Ctrl-Z, stops governor and its command together: a stopped tree does
// no work, and is left to the KILL at the deadline, which a job stopped
// only briefly never meets). It returns how many it signalled.
func termWorking(id string) int {
	marked, err := proc.Marked(EnvRunIDs, id)
	if err != nil {
		return 0
	}
	working := false
	for _, p := range marked {
		working = working || !p.Stopped()
	}
	if !working {
		return 0
	}
	n := 0
	for _, p := range marked {
		if proc.Kill(p.PID, p.Start, syscall.SIGTERM) == nil {
			n++
			_ = proc.Kill(p.PID, p.Start, syscall.SIGCONT)
		}
	}
	return n
}

func errSuffix(err error) string {
	if err != nil {
		return "; " + err.Error()
	}
	return ""
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
