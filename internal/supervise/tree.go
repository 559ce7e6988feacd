//go:build linux || darwin

package supervise

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/governor-dev/governor/governor/proc"
)

// Scan intervals of the supervisor goroutine. While the leader runs and no
// stop is under way, a slow scan pins new descendants and reaps orphans that
// died; once the leader has exited or a stop is under way, scans start fast
// and back off.
//
// A scan lists every process on the machine (proc.List), so scans are
// spaced by at least minGap however many SIGCHLDs arrive.
const (
	trackInterval = time.Second
	fastInterval  = 5 * time.Millisecond
	slowInterval  = 200 * time.Millisecond
	minGap        = 5 * time.Millisecond
	// freezeBudget bounds how long a freeze waits for the tree to stop; a
	// process in uninterruptible sleep may never stop.
	freezeBudget = 250 * time.Millisecond
)

// A Tree is a running command and its descendants. Its methods are safe for
// concurrent use.
//
// Reaping design. Exactly one goroutine, the supervisor, reaps; it never
// waits for "any child", only for a process it has attributed to this tree
// and seen as a zombie child of its own (wait4 by pid), so other children
// of the program keep their statuses. A second goroutine waits for the
// leader's exit without reaping it (waitLeader), to close Done promptly.
// The leader is reaped last, after the rest of the tree has gone: until
// then it is an unreaped child (alive or zombie), its pid cannot be
// reused, and neither can the process-group id, which equals it. That is
// what makes kill(-pgid) safe at every moment a Tree sends it. Individual
// processes are signalled only under their identity (pid and start time):
// through pidfds opened while it was verified (Linux), or after checking
// it again just before kill(2) (proc.Kill; macOS, and Linux where
// proc.Portable), so a reused pid is never signalled.
type Tree struct {
	id       string // the tree id carried in TreeEnv
	pid      int    // the leader's pid, also the process-group id
	grace    time.Duration
	portable bool // without the Linux extras (proc.Portable)

	done    chan struct{}  // closed when the leader has exited
	empty   chan struct{}  // closed when the tree is empty and the leader reaped
	waited  chan struct{}  // closed when Wait's result is ready
	kick    chan struct{}  // wakes the supervisor for a scan
	sigchld chan os.Signal // SIGCHLD, notified from before the leader is started
	swept   chan struct{}  // closed after the first sweep that followed the leader's exit

	stopOnce sync.Once

	terminal *os.File // given to the tree's group while it runs (Options.Terminal)
	cg       *cgroup  // the tree's own cgroup v2 group; nil where none could be made

	// stdio plumbing for readers and writers that are not files
	copiers sync.WaitGroup
	stdin   io.Reader
	stdinW  *os.File
	outputs []output

	mu           sync.Mutex
	members      map[int]*member // attributed processes, leader included
	unmarked     map[int]uint64  // pid -> start of processes newer than the leader, read without TreeEnv's id
	leaderStart  uint64
	leaderExited bool
	leaderErr    error // the peek at the leader failed: someone else reaped it
	leaderReaped bool  // a job-control wait reaped the leader (portable path): leaderStatus is its status
	leaderStatus unix.WaitStatus
	stopping     bool
	stopReason   error
	finished     bool // the leader is reaped; nothing may be signalled
	exit         Exit
	err          error
}

// member is one attributed process, pinned by a pidfd with the Linux
// extras and known by its start time everywhere.
type member struct {
	pid    int
	start  uint64
	pgid   int // as of the latest scan
	fd     int // pidfd; -1 on the portable path
	leader bool
	exited bool // exited, and reaped or waiting for a parent other than us
}

// signal sends sig to m through its pidfd, or, on the portable path, if
// its pid still names the process that started at m.start.
func (m *member) signal(sig syscall.Signal) error {
	if m.fd >= 0 {
		return pidfdSignal(m.fd, sig)
	}
	return proc.Kill(m.pid, m.start, sig)
}

// Start runs opts.Args as the leader of a new process tree: in its own
// process group, and on Linux (unless proc.Portable) with SIGKILL as its
// parent-death signal, after making the calling process a child subreaper
// (see the package documentation for what that implies for the rest of
// the program).
//
// On success the command is running and the returned Tree supervises it
// until the tree is empty, whether or not anyone calls Wait. On failure
// nothing is left running and the error is
// ErrNotFound or ErrNotExecutable (wrapped with the command name) when the
// command cannot be found or executed, or another error when the process
// could not be created.
func Start(opts Options) (*Tree, error) {
	if len(opts.Args) == 0 {
		return nil, fmt.Errorf("%w: no command", ErrNotFound)
	}
	if opts.Dir != "" {
		if st, err := os.Stat(opts.Dir); err != nil {
			return nil, fmt.Errorf("supervise: working directory: %w", err)
		} else if !st.IsDir() {
			return nil, fmt.Errorf("supervise: working directory %s: %w", opts.Dir, syscall.ENOTDIR)
		}
	}
	if err := proc.CheckPortableEnv(); err != nil {
		return nil, fmt.Errorf("supervise: %w", err)
	}
	if _, err := proc.Stat(os.Getpid()); err != nil {
		return nil, fmt.Errorf("supervise: cannot read the process table to follow a process tree: %w", err)
	}
	env := opts.Env
	if env == nil {
		env = os.Environ()
	}
	pathEnv, ok := getenv(env, "PATH")
	if !ok {
		pathEnv = os.Getenv("PATH")
	}
	name := opts.Args[0]
	path, err := lookPath(name, pathEnv, opts.Dir)
	if err != nil {
		return nil, err
	}

	var idb [8]byte
	if _, err := rand.Read(idb[:]); err != nil {
		return nil, fmt.Errorf("supervise: tree id: %w", err)
	}
	t := &Tree{
		id:       fmt.Sprintf("%d-%s", os.Getpid(), hex.EncodeToString(idb[:])),
		grace:    opts.killGrace(),
		portable: proc.Portable(),
		done:     make(chan struct{}),
		empty:    make(chan struct{}),
		waited:   make(chan struct{}),
		kick:     make(chan struct{}, 1),
		swept:    make(chan struct{}),
		members:  make(map[int]*member),
		unmarked: make(map[int]uint64),
	}

	files, childEnds, err := t.stdio(opts)
	if err != nil {
		return nil, err
	}
	closeAll := func(fs []*os.File) {
		for _, f := range fs {
			f.Close()
		}
	}

	attr := &syscall.ProcAttr{
		Dir:   opts.Dir,
		Env:   withTreeID(env, t.id),
		Files: files,
		Sys:   &syscall.SysProcAttr{Setpgid: true},
	}
	if opts.Terminal != nil {
		attr.Sys.Foreground = true
		attr.Sys.Ctty = int(opts.Terminal.Fd())
		t.terminal = opts.Terminal
	}
	// Notified before the leader exists: a job stop that comes before the
	// supervisor goroutine runs must not be lost.
	t.sigchld = make(chan os.Signal, 1)
	signal.Notify(t.sigchld, syscall.SIGCHLD)
	pid, pidfd, err := t.launch(name, path, opts.Args, attr, opts)
	closeAll(childEnds)
	if err != nil {
		signal.Stop(t.sigchld)
		t.closeParentEnds()
		return nil, err
	}
	t.pid = pid
	leader := &member{pid: pid, pgid: pid, fd: pidfd, leader: true}
	if s, err := proc.Stat(pid); err == nil {
		leader.start = s.Start // our unreaped child: the pid is its own
	}
	t.leaderStart = leader.start
	t.members[pid] = leader
	t.startCopiers()

	go t.peekLeader(pidfd)
	go t.supervise()
	return t, nil
}

// Pid returns the pid of the leader, which is also the process-group id.
func (t *Tree) Pid() int { return t.pid }

// Done returns a channel closed when the leader has exited. Descendants may
// still be running then; Wait and Stop wait for them.
func (t *Tree) Done() <-chan struct{} { return t.done }

// Wait waits until the leader has exited and then until no process of the
// tree is left, and returns how the leader ended. Lingering descendants keep
// Wait waiting; call Stop to end them. It may be called any number of times,
// from any goroutine, and always returns the same result. It returns an
// error, with a zero Exit, only when the leader's status could not be
// collected because something else reaped it (see the package
// documentation); the tree has still been swept then.
func (t *Tree) Wait() (Exit, error) {
	<-t.waited
	return t.exit, t.err
}

// Signal sends sig to every process of the tree: to the process group, and
// to attributed descendants that have left the group, each under its
// identity (member.signal). It
// returns ErrFinished once the tree has finished, and otherwise the first
// error of a send other than "no such process". It leaves the tree running
// (unless sig ends it).
func (t *Tree) Signal(sig syscall.Signal) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.finished {
		return ErrFinished
	}
	if snap, err := proc.List(); err == nil {
		t.scanLocked(snap)
	}
	return t.signalLocked(sig)
}

// Stop ends the tree and returns when no process of it is left: it freezes
// the tree (SIGSTOP) so it cannot fork while being enumerated, sends SIGTERM
// and then SIGCONT to every process, waits up to the kill grace for the tree
// to empty, then repeatedly freezes and SIGKILLs whatever is left, including
// processes born during the grace period and those that called setsid.
// reason is recorded in Exit.Stopped if the leader was still running (nil
// means ErrStopped). Calling Stop again, or after the tree has finished,
// only waits for the tree to be empty. A process stuck in uninterruptible
// sleep can delay the return until the kernel lets it die.
func (t *Tree) Stop(reason error) { t.stop(reason, t.grace) }

// StopBy is Stop with the kill grace cut short, if need be, so that KILL
// is sent by killAt: for a tree that must be gone by a deadline (its
// lease's). A killAt already passed sends KILL right after TERM.
func (t *Tree) StopBy(reason error, killAt time.Time) {
	t.stop(reason, max(min(t.grace, time.Until(killAt)), 0))
}

func (t *Tree) stop(reason error, grace time.Duration) {
	if reason == nil {
		reason = ErrStopped
	}
	t.mu.Lock()
	// A leader already reaped by a job-control wait (portable path) has
	// exited, although peekLeader may not have seen it yet: Stop did not
	// stop it (seen under load: Wait said stopped for a leader that had
	// exited with its own code).
	if !t.leaderExited && !t.leaderReaped && t.stopReason == nil {
		t.stopReason = reason
	}
	t.stopping = true
	t.mu.Unlock()
	t.poke()

	t.stopOnce.Do(func() {
		// Once the leader has exited, the supervisor's next sweep
		// usually finds the tree empty (nothing was left behind): then
		// there is nothing to freeze or signal.
		t.mu.Lock()
		exited := t.leaderExited
		t.mu.Unlock()
		if exited {
			select {
			case <-t.empty:
				return
			case <-t.swept:
			}
		}
		t.freeze()
		t.mu.Lock()
		if !t.finished {
			_ = t.signalLocked(syscall.SIGTERM)
			_ = t.signalLocked(syscall.SIGCONT)
		}
		t.mu.Unlock()
		t.poke()

		graceT := time.NewTimer(grace)
		defer graceT.Stop()
		select {
		case <-t.empty:
			return
		case <-graceT.C:
		}

		retry := 10 * time.Millisecond
		for {
			t.freeze()
			t.mu.Lock()
			if !t.finished {
				_ = t.signalLocked(syscall.SIGKILL)
			}
			t.mu.Unlock()
			t.poke()
			again := time.NewTimer(retry)
			select {
			case <-t.empty:
				again.Stop()
				return
			case <-again.C:
			}
			retry = min(2*retry, 500*time.Millisecond)
		}
	})
	<-t.empty
}

// freeze sends SIGSTOP to the tree until a scan finds no new process and
// every process found has stopped, or until freezeBudget has passed. A
// stopped process cannot fork, so after a freeze the tree is fully known,
// except for what escaped attribution altogether.
func (t *Tree) freeze() {
	deadline := time.Now().Add(freezeBudget)
	pause := 500 * time.Microsecond
	for {
		t.mu.Lock()
		if t.finished {
			t.mu.Unlock()
			return
		}
		snap, err := proc.List()
		added, settled := 0, err == nil
		if err == nil {
			var byPid map[int]proc.Info
			added, byPid = t.scanLocked(snap)
			for _, m := range t.members {
				if s, ok := byPid[m.pid]; ok && (m.leader || s.Start == m.start) && !s.Stopped() {
					settled = false // not yet stopped by the previous round
				}
			}
		}
		_ = t.signalLocked(syscall.SIGSTOP)
		t.mu.Unlock()

		if added == 0 && settled || time.Now().After(deadline) {
			return
		}
		wait := time.NewTimer(pause)
		<-wait.C
		pause = min(2*pause, 20*time.Millisecond)
	}
}

// signalLocked sends sig to the process group while its id is pinned, and
// to each member that is outside it (or to every member when the group is
// not pinned) under its identity (member.signal). A member that is gone
// is not an error.
func (t *Tree) signalLocked(sig syscall.Signal) error {
	var first error
	note := func(err error) {
		if err != nil && !errors.Is(err, unix.ESRCH) && !errors.Is(err, proc.ErrNoProcess) && first == nil {
			first = err
		}
	}
	pinned := t.groupPinnedLocked()
	if sig == syscall.SIGKILL && t.cg != nil && !t.finished {
		note(t.cg.kill()) // every process of the tree, attributed or not
	}
	if pinned {
		note(unix.Kill(-t.pid, sig))
	}
	for _, m := range t.members {
		if m.exited || pinned && m.pgid == t.pid {
			continue
		}
		note(m.signal(sig))
	}
	if t.cg != nil && sig != syscall.SIGKILL && !t.finished {
		// Processes of the tree that escaped attribution (environment
		// cleared, not dumpable): the group holds them all.
		note(t.cg.signal(sig, func(pid int) bool {
			if t.members[pid] != nil {
				return true // signalled above, or exited
			}
			// The group signal above reached it.
			s, err := proc.Stat(pid)
			return pinned && err == nil && s.PGID == t.pid
		}))
	}
	return first
}

// groupPinnedLocked reports whether the process-group id is certainly still
// this tree's: the leader has not been reaped.
func (t *Tree) groupPinnedLocked() bool {
	return !t.finished && t.leaderErr == nil && !t.leaderReaped
}

// scanLocked attributes the processes of snap to the tree and pins the new
// ones. It returns how many were new, and snap by pid.
func (t *Tree) scanLocked(snap []proc.Info) (int, map[int]proc.Info) {
	self := os.Getpid()
	byPid := make(map[int]proc.Info, len(snap))
	children := make(map[int][]proc.Info)
	for _, s := range snap {
		byPid[s.PID] = s
		children[s.PPID] = append(children[s.PPID], s)
	}
	// A member whose pid now belongs to another process is long gone.
	for pid, m := range t.members {
		if s, ok := byPid[pid]; ok && !m.leader && s.Start != m.start {
			t.dropLocked(m)
		}
	}
	for pid, start := range t.unmarked {
		if s, ok := byPid[pid]; !ok || s.Start != start {
			delete(t.unmarked, pid)
		}
	}

	pinned := t.groupPinnedLocked()
	var queue []proc.Info
	for _, s := range snap {
		m := t.members[s.PID]
		switch {
		case m != nil && (m.leader || m.start == s.Start):
		case pinned && s.PGID == t.pid:
		case m == nil && t.markedLocked(s, self):
		default:
			continue
		}
		queue = append(queue, s)
	}
	added := 0
	seen := make(map[int]bool)
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		if seen[s.PID] {
			continue
		}
		seen[s.PID] = true
		if m := t.members[s.PID]; m != nil {
			m.pgid = s.PGID
		} else if !t.pinLocked(s) {
			continue // gone, or no longer the process the snapshot saw
		} else {
			added++
		}
		// Every child of a member is a member. The child's ppid was read
		// within the same snapshot as the parent's entry; a parent pid
		// reused in between would take a full wrap of the pid space.
		queue = append(queue, children[s.PID]...)
	}
	return added, byPid
}

// markedLocked reports whether s carries the tree's id in its initial
// environment (TreeEnv): a descendant that left the process group and
// whose parent exited before a scan saw it. Re-parented orphans of the
// supervisor (a child subreaper, with the Linux extras) are read at every
// scan; any other process newer than the leader is read once, since it
// goes to whatever reaps orphans there (launchd on macOS). The leader
// itself, and processes as old as the supervisor, never qualify.
func (t *Tree) markedLocked(s proc.Info, self int) bool {
	if s.PID == self || s.PID == t.pid || s.Start < t.leaderStart {
		return false
	}
	if s.PPID == self {
		return hasTreeID(s.PID, t.id)
	}
	if start, ok := t.unmarked[s.PID]; ok && start == s.Start {
		return false
	}
	if hasTreeID(s.PID, t.id) {
		return true
	}
	t.unmarked[s.PID] = s.Start
	return false
}

// pinLocked records the process s describes as a member. With the Linux
// extras it is pinned by a pidfd, if the pidfd provably refers to that
// process (its start time still matches once the pidfd is open); on the
// portable path its start time is its identity, checked again before
// every signal.
func (t *Tree) pinLocked(s proc.Info) bool {
	fd := -1
	if !t.portable {
		var ok bool
		if fd, ok = openPidfd(s); !ok {
			return false
		}
	}
	t.members[s.PID] = &member{pid: s.PID, start: s.Start, pgid: s.PGID, fd: fd}
	return true
}

func (t *Tree) dropLocked(m *member) {
	if m.fd >= 0 {
		closePidfd(m.fd)
	}
	delete(t.members, m.pid)
}

// reapLocked collects the members that have exited, as byPid (a
// snapshot taken after they were attributed) shows them. A zombie that is
// our child (a re-parented orphan) is reaped by pid, which its being our
// unreaped child pins; other zombies are left to their parents, and
// members gone from the snapshot are forgotten. Only the supervisor
// goroutine calls it, and it never touches the leader.
func (t *Tree) reapLocked(byPid map[int]proc.Info) {
	self := os.Getpid()
	for _, m := range t.members {
		if m.leader {
			continue
		}
		s, ok := byPid[m.pid]
		switch {
		case !ok || s.Start != m.start:
			t.dropLocked(m) // reaped, by us or by its own parent
		case !s.Zombie():
			m.exited = false
		case s.PPID == self:
			var ws unix.WaitStatus
			if pid, err := unix.Wait4(m.pid, &ws, unix.WNOHANG, nil); pid == m.pid || err == unix.ECHILD {
				t.dropLocked(m)
			} else {
				m.exited = true
			}
		default:
			m.exited = true // a zombie waiting for a parent in the tree
		}
	}
}

// busyLocked reports whether any process of the tree may still run.
func (t *Tree) busyLocked() bool {
	if !t.leaderExited {
		return true
	}
	for _, m := range t.members {
		if !m.leader && !m.exited {
			return true
		}
	}
	return false
}

func (t *Tree) poke() {
	select {
	case t.kick <- struct{}{}:
	default:
	}
}

// peekLeader waits for the leader to exit without reaping it, so that Done
// closes promptly while the group id stays pinned.
func (t *Tree) peekLeader(pidfd int) {
	err := t.waitLeader(pidfd)
	t.mu.Lock()
	t.leaderExited = true
	if err != nil && !t.leaderReaped {
		t.leaderErr = fmt.Errorf("supervise: waiting for pid %d: %w", t.pid, err)
	}
	close(t.done)
	t.mu.Unlock()
	t.poke()
}

// supervise is the one goroutine that reaps. It scans the tree on a timer,
// on SIGCHLD (an orphan of ours died) and when poked, and finishes the tree
// once the leader has exited and no other member is left. With a terminal
// it also follows job stops of the leader on SIGCHLD, and on the timer in
// case a SIGCHLD was merged with another.
func (t *Tree) supervise() {
	defer signal.Stop(t.sigchld)

	// No scan at once: the leader is already pinned, and a command that
	// ends within trackInterval is scanned when it ends.
	interval := trackInterval
	timer := time.NewTimer(trackInterval)
	defer timer.Stop()
	var last time.Time
	sweptOnce := false
	for {
		woken, kicked := true, false
		select {
		case <-timer.C:
			woken = false
		case <-t.sigchld:
		case <-t.kick:
			kicked = true
		}
		// Every wake looks for a job stop, not only a SIGCHLD: one
		// waitid, and a stop is never missed for a signal that was
		// merged with another or came while this goroutine was busy.
		if t.terminal != nil {
			t.followJobStop()
		}
		// The gap bounds the scan rate under a storm of SIGCHLDs; a kick
		// (the leader exited, a stop began) comes once and is served at
		// once: a short command must not wait out a gap.
		if gap := minGap - time.Since(last); woken && !kicked && gap > 0 {
			timer.Reset(gap) // too soon: scan when the gap has passed
			continue
		}
		last = time.Now()
		t.mu.Lock()
		exited := t.leaderExited
		t.mu.Unlock()
		if t.sweep() {
			break
		}
		if exited && !sweptOnce {
			sweptOnce = true
			close(t.swept)
		}
		t.mu.Lock()
		fast := t.leaderExited || t.stopping
		t.mu.Unlock()
		switch {
		case !fast:
			interval = trackInterval
		case woken || interval >= trackInterval:
			interval = fastInterval
		default:
			interval = min(2*interval, slowInterval)
		}
		timer.Reset(interval)
	}
	t.finish()
}

// sweep scans and reaps once, and reports whether the tree is finished.
// Finishing needs a second scan taken after every member was seen gone: a
// child forked just before its parent exited is in that scan.
func (t *Tree) sweep() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	// With the tree's own cgroup empty after the leader's exit, no process
	// of the tree is alive (none can fork any more): one scan, to reap
	// what has died, is enough.
	empty := t.cg != nil && t.leaderExited && !t.cg.populated()
	for range 2 {
		snap, err := t.snapshotLocked(empty)
		if err != nil {
			// The process table could be read at Start. Without it the
			// tree cannot be followed; do not wait forever for what
			// cannot be seen.
			if !t.leaderExited {
				return false
			}
			break
		}
		added, byPid := t.scanLocked(snap)
		t.reapLocked(byPid)
		if t.busyLocked() || added > 0 && !empty {
			return false
		}
		if empty {
			break
		}
	}
	if t.cg != nil && !empty && t.cg.populated() {
		// A process of the tree that the scans could not attribute
		// (its environment cleared, not dumpable) is still running:
		// the tree is not finished. Stop's KILL reaches it.
		return false
	}
	t.reapLeaderLocked()
	return true
}

// listProcesses reads every process on the machine (proc.List; a test
// counts the calls).
var listProcesses = proc.List

// snapshotLocked lists the processes a sweep looks at: every process on
// the machine, or, once the tree's own cgroup is empty and the leader a
// zombie, only this process's children. No process of the tree runs
// then; all that is left to do is to reap the zombies re-parented to
// this process, which are among its children: a few files to read
// (proc.Children) instead of one per process on the machine, ~0.9 ms
// with 90 processes. empty says the sweep found the group empty after
// the leader's exit; a sweep woken by the leader's SIGCHLD, before
// peekLeader has marked the exit, checks the group itself. Where the
// kernel does not list children (no CONFIG_PROC_CHILDREN), the leader,
// an unreaped child, is missing from the list and every process is
// read.
func (t *Tree) snapshotLocked(empty bool) ([]proc.Info, error) {
	if t.cg != nil && (empty || !t.cg.populated()) {
		if snap, ok := ownChildren(t.pid); ok {
			return snap, nil
		}
	}
	return listProcesses()
}

// ownChildren reads the stat of every child of this process, zombies
// included, and reports whether leader is among them, exited.
func ownChildren(leader int) ([]proc.Info, bool) {
	pids := proc.Children(os.Getpid())
	snap := make([]proc.Info, 0, len(pids))
	exited := false
	for _, pid := range pids {
		s, err := proc.Stat(pid)
		if err != nil {
			continue // reaped meanwhile by another part of the program
		}
		exited = exited || pid == leader && s.Zombie()
		snap = append(snap, s)
	}
	return snap, exited
}

// reapLeaderLocked reaps the leader, which by now is a zombie child, and
// forgets every member: from here on nothing of the tree may be signalled.
func (t *Tree) reapLeaderLocked() {
	if t.leaderErr != nil {
		t.err = t.leaderErr
	} else {
		ws := t.leaderStatus
		var err error
		for !t.leaderReaped {
			// By pid is safe: the leader is our unreaped child, so the pid
			// is still its own.
			_, err = unix.Wait4(t.pid, &ws, 0, nil)
			if err != unix.EINTR {
				break
			}
		}
		switch {
		case err != nil:
			t.err = fmt.Errorf("supervise: reaping pid %d: %w", t.pid, err)
		case ws.Signaled():
			t.exit.Signal = ws.Signal()
		default:
			t.exit.Code = ws.ExitStatus()
		}
	}
	t.exit.Stopped = t.stopReason
	t.finished = true
	for _, m := range t.members {
		t.dropLocked(m)
	}
}

// finish releases what the tree held and publishes Wait's result.
func (t *Tree) finish() {
	if t.terminal != nil {
		takeTerminal(t.terminal)
	}
	t.releaseExtras()
	close(t.empty)
	if t.stdinW != nil {
		t.stdinW.Close() // unblocks a stdin copier writing to a dead tree
	}
	// Output pipes reach EOF when the last holder has exited. Only a process
	// that escaped attribution can still hold one; do not wait for it long.
	copied := make(chan struct{})
	go func() {
		t.copiers.Wait()
		close(copied)
	}()
	timer := time.NewTimer(t.grace)
	select {
	case <-copied:
	case <-timer.C:
		for _, o := range t.outputs {
			o.r.Close()
		}
		<-copied
	}
	timer.Stop()
	close(t.waited)
}
