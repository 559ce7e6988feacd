package runner

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/governor-dev/governor/governor/proc"
	"github.com/governor-dev/governor/internal/supervise"
)

// watchdog is the process that kills the run's tree if governor dies.
type watchdog struct {
	cmd    *exec.Cmd
	pipe   *os.File // the write end; governor's death closes it
	exited chan struct{}

	mu   sync.Mutex
	tree *supervise.Tree // the command tree, once started (follow)
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
//
// The plan goes with the members of the command tree (membersMessage),
// in one write, so that the watchdog knows the tree as of each plan.
func (w *watchdog) send(p stopPlan) {
	w.mu.Lock()
	tree := w.tree
	w.mu.Unlock()
	msg := p.message()
	if tree != nil {
		msg = membersMessage(tree.Members()) + msg
	}
	w.write(msg)
}

// write writes msg to the watchdog, giving up after a moment (see send).
func (w *watchdog) write(msg string) {
	if msg == "" {
		return
	}
	_ = w.pipe.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	_, _ = io.WriteString(w.pipe, msg)
}

// follow makes every later plan carry the members of tree.
func (w *watchdog) follow(tree *supervise.Tree) {
	w.mu.Lock()
	w.tree = tree
	w.mu.Unlock()
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

// pollCap bounds each wait of the watchdog: it looks at the pipe, at
// SIGTERM and at the machine clock at least this often. Waits run on
// CLOCK_MONOTONIC, which stops while the machine is suspended; the plan's
// clock (proc.SleepClock) does not, so a deadline that passed during a
// suspend is acted on within pollCap of the resume.
const pollCap = 250 * time.Millisecond

// The clocks the watchdog reads its plans on (machinePlan): a test fakes
// a suspend with them.
var (
	planClock    = proc.SleepClock
	machineClock = proc.MachineClock
)

// now reads the current plan's clock.
func (g *guard) now() time.Duration {
	if g.plan.machine {
		return machineClock()
	}
	return planClock()
}

// Watchdog is the body of the watchdog process that Run starts (`governor
// run --watchdog ID`). It reads pipe (descriptor 3 of that process), a
// line at a time, until Run writes "done", and exits 0.
//
// With each plan Run writes the processes its supervisor has attributed
// to the command tree, "members PID:START ..." (the leader first), and
// after each renewal of the run's leases their stop plan, "deadline TERM
// KILL CLOCK", as readings of proc.SleepClock (CLOCK_BOOTTIME on Linux,
// CLOCK_MONOTONIC on macOS: both run on while the machine sleeps, as
// Redis's clock does), or on the file backend of proc.MachineClock (its
// expiries stop in a suspend as governor's clock does). The
// tree, as the watchdog finds it (knownTree.find), is those members under
// their identity, the leader's process group while a member is in it,
// the processes whose initial environment lists id in GOVERNOR_RUN_IDS,
// and every descendant of those by its parent link: it holds a
// descendant that cleared its environment (env -i) on every system.
//
// Every plan in the pipe is read before a deadline is acted on: a
// watchdog resumed after a stop (SIGSTOP, a suspend) past its deadline
// finds there the newer plans governor sent meanwhile. If no newer plan
// has come by TERM and governor is stopped (SIGSTOP: it cannot stop the
// tree itself) while its command works on, Watchdog sends TERM and CONT
// to every process of the tree (a tree stopped with governor, Ctrl-Z, is
// left alone until KILL); by KILL (the leases' local deadline, before the
// backend could grant the slots elsewhere) it kills the run's cgroup, if
// any, and SIGKILLs the tree — whether governor is stopped or not — then
// waits for the pipe again. It says on stderr why it did either, and
// records it (eventkind.WatchdogKill) on each lease of the "record" line
// governor sent after the grant (where to: the run's store), once the
// signals are sent, within recordBudget.
//
// If the pipe reaches end of file first, governor has died — SIGKILL
// included — and Watchdog kills the run's cgroup, if any, and SIGKILLs,
// each under its identity (pid and start time, proc.Kill), the processes
// of the tree until two scans in a row find none; it reports what it did
// on stderr and records it, and says "stopped" only once no process of
// the tree is left (sweepBudget bounds the wait). The pipe, whose write end only governor
// holds (close-on-exec), is how the watchdog learns of governor's death
// on every system: its end of file is the same event as a kqueue
// NOTE_EXIT on governor's pid would be on macOS, with no pid to be reused
// meanwhile. SIGTERM makes it sweep at once; INT, HUP and QUIT are
// ignored. It returns the exit code for the process: 0, or 125 on bad
// arguments, an unreadable pipe or an incomplete sweep.
func Watchdog(id string, pipe *os.File, stderr io.Writer) int {
	if id == "" || strings.ContainsAny(id, " \t\n") {
		fmt.Fprintf(stderr, "governor: watchdog: run id %q: expected the id Run passes\n", id)
		return ExitFailure
	}
	signal.Ignore(syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT)
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	defer signal.Stop(term)
	return watch(id, pipe, stderr, term)
}

// watch is Watchdog once the signals are set: term ends it with a sweep.
func watch(id string, pipe *os.File, stderr io.Writer, term <-chan os.Signal) int {
	fd := int(pipe.Fd())
	defer runtime.KeepAlive(pipe)
	if err := unix.SetNonblock(fd, true); err != nil {
		fmt.Fprintf(stderr, "governor: watchdog of run %s: the pipe: %v\n", id, err)
		return ExitFailure
	}
	g := &guard{id: id, stderr: stderr, gov: parent()}
	defer g.settle()
	why := "governor exited without releasing"
	for {
		// Read everything governor wrote before looking at a deadline.
		switch g.drain(fd) {
		case pipeDone:
			return ExitOK
		case pipeEnded:
			return g.final(why)
		}
		select {
		case <-term:
			return g.final("the watchdog got SIGTERM")
		default:
		}
		g.act()
		wait := g.untilNext()
		_, _ = unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, int((wait+time.Millisecond-1)/time.Millisecond))
	}
}

// guard is the watchdog's state: the latest plan and what it knows of
// the tree.
type guard struct {
	id     string
	stderr io.Writer
	gov    proc.Info // governor, the watchdog's parent at its start
	tree   knownTree
	plan   machinePlan
	rec    *watchdogRecord // where to record what it does; nil until sent
	// pending counts the records note is making.
	pending sync.WaitGroup
	armed   bool // a plan is to be acted on
	termed  bool // TERM's instant of the current plan has passed
	buf     []byte
}

type pipeState int

const (
	pipeOpen  pipeState = iota // nothing more to read for now
	pipeDone                   // governor wrote "done"
	pipeEnded                  // end of file (governor died) or a read error
)

// drain reads what the pipe holds without waiting and takes in each
// complete line: a members line adds to the tree, a plan replaces the
// plan.
func (g *guard) drain(fd int) pipeState {
	b := make([]byte, 4096)
	for {
		n, err := unix.Read(fd, b)
		if n > 0 {
			g.buf = append(g.buf, b[:n]...)
			for {
				i := bytes.IndexByte(g.buf, '\n')
				if i < 0 {
					break
				}
				line := string(g.buf[:i])
				g.buf = g.buf[i+1:]
				if g.take(line) {
					return pipeDone
				}
			}
			continue
		}
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return pipeOpen
		case err != nil:
			fmt.Fprintf(g.stderr, "governor: watchdog of run %s: reading the pipe: %v\n", g.id, err)
		}
		return pipeEnded
	}
}

// take takes in one line and reports whether it was "done".
func (g *guard) take(line string) bool {
	if strings.HasPrefix(line, msgMembers+" ") {
		if err := g.tree.parseMembers(line); err != nil {
			fmt.Fprintf(g.stderr, "governor: watchdog of run %s: %v\n", g.id, err)
		}
		return false
	}
	if strings.HasPrefix(line, msgRecord+" ") {
		rec, err := parseRecord(line)
		if err != nil {
			fmt.Fprintf(g.stderr, "governor: watchdog of run %s: %v\n", g.id, err)
			return false
		}
		g.rec = rec
		return false
	}
	done, p, err := parseLine(line)
	switch {
	case err != nil:
		fmt.Fprintf(g.stderr, "governor: watchdog of run %s: %v\n", g.id, err)
	case done:
		return true
	default:
		g.plan, g.armed, g.termed = p, true, false
	}
	return false
}

// untilNext is how long to wait for the next look: until the plan's next
// instant, at most pollCap.
func (g *guard) untilNext() time.Duration {
	if !g.armed {
		return pollCap
	}
	next := g.plan.kill
	if !g.termed {
		next = g.plan.term
	}
	return min(max(next-g.now(), 0), pollCap)
}

// act carries out the plan's TERM or KILL if its instant has passed.
func (g *guard) act() {
	now := g.now()
	if !g.armed || now < g.plan.term {
		return
	}
	if !g.termed && now < g.plan.kill {
		g.termed = true
		if governorStopped() {
			if n := g.termWorking(); n > 0 {
				g.tell(fmt.Sprintf("governor (pid %d) is stopped and renewed no lease; sent TERM to %d processes of its command, KILL follows by the leases' deadline", os.Getppid(), n))
			}
		}
		return
	}
	if now < g.plan.kill {
		return
	}
	g.armed = false // until a newer plan comes
	state := governorState()
	killed, err := g.killTree()
	freed := g.killStoppedLockHolder()
	if freed {
		state += " inside a state write, holding every other process of its resource: killed it"
	}
	if killed > 0 || err != nil || freed {
		g.tell(fmt.Sprintf("no lease renewal came by the leases' deadline (governor %s); killed %d processes of its command%s",
			state, killed, g.stoppedSuffix(err)))
	}
}

// parent is the watchdog's parent, governor, as it is at the start (the
// zero Info if it is gone already).
func parent() proc.Info {
	s, err := proc.Stat(os.Getppid())
	if err != nil {
		return proc.Info{}
	}
	return s
}

// killStoppedLockHolder SIGKILLs governor if, once its leases' deadline
// has passed, it is stopped holding an exclusive flock: stopped inside a
// file-backend state write (the only exclusive flock governor takes),
// which holds every other process of the resource — the next run and
// this watchdog's record included — for as long as it stays stopped. By
// then its leases are lost and its command is killed: resumed, it would
// only exit 122. A governor stopped outside a write (Ctrl-Z) is left to
// exit 122 itself once resumed. It reports whether it killed governor;
// where locks cannot be read (macOS) it does nothing.
func (g *guard) killStoppedLockHolder() bool {
	if g.gov.PID == 0 || !governorStopped() {
		return false
	}
	if held, _ := proc.HoldsExclusiveFlock(g.gov.PID); !held { // the lines that can be read serve
		return false
	}
	return proc.Kill(g.gov.PID, g.gov.Start, syscall.SIGKILL) == nil
}

// tell says what the watchdog did, and why, on stderr, then records it
// (note).
func (g *guard) tell(msg string) {
	fmt.Fprintf(g.stderr, "governor: watchdog of run %s: %s\n", g.id, msg)
	g.note(msg)
}

// final kills the tree once governor is gone (or the watchdog told to
// stop), says why, and returns the exit code.
func (g *guard) final(why string) int {
	killed, err := g.killTree()
	if killed > 0 || err != nil {
		g.tell(fmt.Sprintf("%s; killed %d processes of its command%s", why, killed, g.stoppedSuffix(err)))
	}
	if err != nil {
		return ExitFailure
	}
	removeEntry(os.Environ(), g.id) // governor's, left for a tree now gone
	return ExitOK
}

// stoppedSuffix says whether the tree is gone: only when the sweep found
// no process of it left.
func (g *guard) stoppedSuffix(err error) string {
	if err != nil {
		return "; " + err.Error()
	}
	return "; no process of it is left"
}

// killTree kills run id's cgroup, where it has one (it holds the
// processes no scan can attribute), then sweeps the tree, and removes the
// cgroup. It returns how many processes it killed: those the sweep
// killed, or those the cgroup held if more (the sweep may find the
// group's, dying, again).
func (g *guard) killTree() (int, error) {
	cg, hasCgroup := proc.ChildCgroup(proc.RunCgroupName(g.id))
	var err error
	inGroup := 0
	if hasCgroup {
		if b, rerr := os.ReadFile(filepath.Join(cg, "cgroup.procs")); rerr == nil {
			inGroup = len(strings.Fields(string(b)))
		}
		if kerr := proc.KillCgroup(cg); kerr != nil && !errors.Is(kerr, os.ErrNotExist) {
			err = fmt.Errorf("killing cgroup %s: %w", cg, kerr)
		}
	}
	killed, serr := g.sweep()
	killed = max(killed, inGroup)
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

// governorState names governor's state for a message.
func governorState() string {
	if governorStopped() {
		return fmt.Sprintf("pid %d is stopped", os.Getppid())
	}
	return fmt.Sprintf("pid %d runs but renewed nothing", os.Getppid())
}

// termWorking sends TERM and CONT to every process of the tree, each
// under its identity, unless every one of them is stopped (a job stop,
// Ctrl-Z, stops governor and its command together: a stopped tree does
// no work, and is left to the KILL at the deadline, which a job stopped
// only briefly never meets). It returns how many it signalled.
func (g *guard) termWorking() int {
	live, err := g.tree.live(g.id)
	if err != nil {
		return 0
	}
	working := false
	for _, p := range live {
		working = working || !p.Stopped()
	}
	if !working {
		return 0
	}
	n := 0
	for _, p := range live {
		if proc.Kill(p.PID, p.Start, syscall.SIGTERM) == nil {
			n++
			_ = proc.Kill(p.PID, p.Start, syscall.SIGCONT)
		}
	}
	return n
}
