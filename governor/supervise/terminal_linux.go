package supervise

import (
	"os"
	"os/signal"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
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
	if _, err := unix.IoctlGetTermios(fd, unix.TCGETS); err != nil {
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
	var info unix.Siginfo
	// WSTOPPED without WEXITED: this consumes a stop report and never
	// reaps the leader.
	t.mu.Lock()
	fd := -1
	if m := t.members[t.pid]; m != nil && !t.finished {
		fd = m.fd
	}
	t.mu.Unlock()
	if fd < 0 || unix.Waitid(unix.P_PIDFD, fd, &info, unix.WSTOPPED|unix.WNOHANG, nil) != nil {
		return
	}
	// Read after the report: a freeze sets stopping before its SIGSTOP.
	t.mu.Lock()
	stopping := t.stopping
	t.mu.Unlock()
	pid, status := childInfo(&info)
	if pid == 0 || info.Code != cldStopped || stopping {
		return // nothing to report, or our own freeze of the tree
	}
	sig := syscall.Signal(status) // TSTP (Ctrl-Z), TTIN, TTOU, or a STOP the command sent itself
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

// cldStopped is CLD_STOPPED, the si_code of a child stopped by a signal.
const cldStopped = 5

// childInfo reads si_pid and si_status of a SIGCHLD siginfo, which
// x/sys's Siginfo keeps in its padding: after three ints comes a union,
// aligned as a pointer, that starts with pid, uid, status. A pid of 0
// means waitid found nothing to report.
func childInfo(info *unix.Siginfo) (pid, status int32) {
	const ptr = unsafe.Sizeof(uintptr(0))
	const union = (12 + ptr - 1) &^ (ptr - 1)
	b := (*[union + 12]byte)(unsafe.Pointer(info))
	pid = *(*int32)(unsafe.Pointer(&b[union]))
	status = *(*int32)(unsafe.Pointer(&b[union+8]))
	return pid, status
}
