package supervise

import (
	"errors"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/governor-dev/governor/governor/proc"
)

// The macOS layer of the engine: macOS has no cgroups, no pidfds, no
// child subreaper and no parent-death signal, so a tree is always
// followed the portable way (proc.Portable): processes listed and
// identified through sysctl kern.proc (governor/proc), each start time
// checked again before every signal, the leader's exit learnt through
// kqueue. The engine (tree.go) is the one Linux runs with
// GOVERNOR_PORTABLE=1, which the test suite does.

// badExecutable are the errors of execve(2), beside the POSIX ones, that
// say the file cannot be executed: a binary for another architecture, a
// malformed one.
var badExecutable = []syscall.Errno{syscall.EBADARCH, syscall.EBADEXEC, syscall.EBADMACHO}

// launch starts the leader as attr describes (its own process group, its
// terminal). There is no pidfd: the second result is -1.
func (t *Tree) launch(name, path string, argv []string, attr *syscall.ProcAttr, opts Options) (pid, pidfd int, err error) {
	pid, err = syscall.ForkExec(path, argv, attr)
	if err != nil {
		return 0, -1, execError(name, path, opts.Dir, err)
	}
	return pid, -1, nil
}

// releaseExtras has nothing to give back on macOS.
func (t *Tree) releaseExtras() {}

// waitLeader waits until the leader has exited, without reaping it: until
// it is reaped its pid, and so the process-group id, cannot be reused. A
// kqueue EVFILT_PROC filter with NOTE_EXIT fires when the process exits
// (it is then a zombie). The filter is registered first and the state
// read second, so an exit before the registration is seen by the read
// (a zombie, or no process at all: ESRCH) and one after it by the filter:
// XNU's filt_procattach fails with ESRCH where proc_find finds nothing,
// and otherwise reports only events that come after it.
func (t *Tree) waitLeader(int) error {
	kq, err := unix.Kqueue()
	if err != nil {
		return err
	}
	defer unix.Close(kq)
	change := []unix.Kevent_t{{
		Ident:  uint64(t.pid),
		Filter: unix.EVFILT_PROC,
		Flags:  unix.EV_ADD | unix.EV_ONESHOT,
		Fflags: unix.NOTE_EXIT,
	}}
	for {
		_, err = unix.Kevent(kq, change, nil, nil)
		if err != unix.EINTR {
			break
		}
	}
	if err == unix.ESRCH {
		return nil // already exited
	}
	if err != nil {
		return err
	}
	if s, err := proc.Stat(t.pid); err != nil || s.Zombie() {
		return nil
	}
	events := make([]unix.Kevent_t, 1)
	for {
		n, err := unix.Kevent(kq, nil, events, nil)
		if err == unix.EINTR || err == nil && n == 0 {
			continue
		}
		return err
	}
}

// No pidfds on macOS: nothing calls these where proc.Portable.

func openPidfd(proc.Info) (int, bool)         { return -1, false }
func pidfdSignal(int, syscall.Signal) error   { return errors.ErrUnsupported }
func closePidfd(int)                          {}
func pidfdJobStop(int) (syscall.Signal, bool) { return 0, false }

// getTermios is the ioctl that reads a terminal's settings.
const getTermios = unix.TIOCGETA
