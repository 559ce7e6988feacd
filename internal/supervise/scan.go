//go:build linux || darwin

package supervise

import (
	"os"

	"golang.org/x/sys/unix"

	"github.com/governor-dev/governor/governor/proc"
)

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
		has, _ := treeIDOf(s.PID, t.id)
		return has
	}
	if start, ok := t.unmarked[s.PID]; ok && start == s.Start {
		return false
	}
	has, read := treeIDOf(s.PID, t.id)
	if has {
		return true
	}
	// Only an environment read without the id is remembered: one that
	// could not be read, or read empty (a process in the middle of an
	// exec, on Linux), is read again at the next scan. Remembered, such
	// a member escaped Stop on the portable path when its parent exited
	// before a scan saw it (a `(setsid sleep &)` under load, CI).
	if read {
		t.unmarked[s.PID] = s.Start
	}
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
