//go:build linux || darwin

package supervise

import (
	"fmt"
	"os"
	"os/signal"
	"time"

	"golang.org/x/sys/unix"

	"github.com/governor-dev/governor/governor/proc"
)

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
