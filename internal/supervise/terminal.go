//go:build linux || darwin

package supervise

import (
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/governor-dev/governor/governor/proc"
)

// ForegroundTerminal returns f when it is a terminal whose foreground
// process group is the calling process's: then a command run from it can
// be given the terminal (Options.Terminal). It returns nil otherwise — not
// a terminal, or governor itself runs in the background.
func ForegroundTerminal(f *os.File) *os.File {
	if f == nil {
		return nil
	}
	fd := int(f.Fd())
	if _, err := unix.IoctlGetTermios(fd, getTermios); err != nil {
		return nil
	}
	pgrp, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
	if err != nil || pgrp != unix.Getpgrp() {
		return nil
	}
	return f
}

// takeTerminal makes the caller's process group the terminal's foreground
// group again. A background group that does so gets SIGTTOU, which is
// ignored for the call.
func takeTerminal(f *os.File) {
	if !signal.Ignored(syscall.SIGTTOU) {
		signal.Ignore(syscall.SIGTTOU)
		defer signal.Reset(syscall.SIGTTOU)
	}
	_ = unix.IoctlSetPointerInt(int(f.Fd()), unix.TIOCSPGRP, unix.Getpgrp())
}

// followJobStop makes job control work through governor. The tree's group
// has the terminal, so Ctrl-Z (SIGTSTP), or a read or write from the
// background (SIGTTIN, SIGTTOU), stops the command, not governor, and the
// shell, which waits for governor's job, would never get its terminal back.
// When the leader has stopped so, followJobStop takes the terminal back and
// stops governor's own process group with the same signal: the shell sees
// its job stopped. Once continued (fg or bg), it gives the terminal back to
// the tree if governor is in the foreground again, and continues the tree.
// A stop while governor stops the tree (its freeze sends SIGSTOP) is not a
// job stop and is left alone. The supervisor calls it on SIGCHLD.
func (t *Tree) followJobStop() {
	t.mu.Lock()
	fd, finished := -1, t.finished
	if m := t.members[t.pid]; m != nil {
		fd = m.fd
	}
	t.mu.Unlock()
	if finished {
		return
	}
	sig, ok := t.leaderJobStop(fd)
	// Read after the report: a freeze sets stopping before its SIGSTOP.
	t.mu.Lock()
	stopping := t.stopping
	t.mu.Unlock()
	if !ok || stopping {
		return // nothing to report, or our own freeze of the tree
	}
	// sig is TSTP (Ctrl-Z), TTIN, TTOU, or a STOP the command sent itself.
	cont := make(chan os.Signal, 1)
	signal.Notify(cont, syscall.SIGCONT)
	defer signal.Stop(cont)
	takeTerminal(t.terminal)
	// Our group is the shell's job. The default action of sig stops us
	// (the Go runtime does not catch it), until the shell continues us;
	// if governor was started with it ignored, SIGSTOP does the same.
	if sig != syscall.SIGSTOP && signal.Ignored(sig) {
		sig = syscall.SIGSTOP
	}
	_ = unix.Kill(0, sig)
	<-cont
	if ForegroundTerminal(t.terminal) != nil {
		_ = unix.IoctlSetPointerInt(int(t.terminal.Fd()), unix.TIOCSPGRP, t.pid)
	}
	t.mu.Lock()
	if !t.finished {
		_ = t.signalLocked(syscall.SIGCONT)
	}
	t.mu.Unlock()
}

// leaderJobStop consumes a report that the leader was stopped by a signal,
// and returns that signal. With the Linux extras the report is read from
// the leader's pidfd (waitid WSTOPPED, which never reaps). The portable
// path has only wait4(WUNTRACED), which also reports an exit and then
// reaps; so it waits only for a leader it has just seen stopped. Should
// the leader exit in that moment (a SIGKILL), its status is kept for
// Wait, and from then on the group is no longer pinned and is signalled
// member by member. Only the supervisor goroutine calls it, as it does
// reapLeaderLocked.
func (t *Tree) leaderJobStop(pidfd int) (syscall.Signal, bool) {
	if pidfd >= 0 {
		return pidfdJobStop(pidfd)
	}
	if s, err := proc.Stat(t.pid); err != nil || !s.Stopped() || s.Zombie() {
		return 0, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.waitJobStopLocked()
}

// waitJobStopLocked is the portable leaderJobStop once the leader was seen
// stopped: wait4(WUNTRACED), which reaps the leader if it has exited
// meanwhile and then keeps its status for Wait. It runs under the lock,
// which peekLeader takes before it reports an error, so that a wait that
// failed because this reaped the leader is known to be ours.
func (t *Tree) waitJobStopLocked() (syscall.Signal, bool) {
	if t.finished || t.leaderReaped {
		return 0, false // the pid may be another process's by now
	}
	var ws unix.WaitStatus
	pid, err := unix.Wait4(t.pid, &ws, unix.WUNTRACED|unix.WNOHANG, nil) // WNOHANG: never blocks
	if err != nil || pid != t.pid {
		return 0, false
	}
	if ws.Stopped() {
		return ws.StopSignal(), true
	}
	t.leaderReaped, t.leaderStatus = true, ws
	if m := t.members[t.pid]; m != nil {
		m.exited = true
	}
	return 0, false
}
