//go:build linux || darwin

package supervise

import (
	"errors"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/governor-dev/governor/governor/proc"
)

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
