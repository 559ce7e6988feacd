package supervise

import (
	"fmt"
	"runtime"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/governor-dev/governor/governor/proc"
)

// The Linux layer of the engine. Unless proc.Portable, a tree gets the
// Linux extras: the supervisor is a child subreaper, the leader has SIGKILL
// as parent-death signal and is born in its own cgroup where one can be
// made, and every member is pinned and signalled through a pidfd. Where
// proc.Portable, a tree gets what it gets on macOS (start_darwin.go),
// through the same engine (tree.go): that is how the suite runs the macOS
// path.

// badExecutable are the errors of execve(2), beside the POSIX ones, that
// say the file cannot be executed.
var badExecutable = []syscall.Errno{syscall.ELIBBAD}

// launch starts the leader as attr describes (its own process group, its
// terminal) and returns its pid and, with the Linux extras, a pidfd for it
// (-1 otherwise). On failure nothing is left running.
func (t *Tree) launch(name, path string, argv []string, attr *syscall.ProcAttr, opts Options) (pid, pidfd int, err error) {
	if t.portable {
		pid, err = syscall.ForkExec(path, argv, attr)
		if err != nil {
			return 0, -1, execError(name, path, opts.Dir, err)
		}
		return pid, -1, nil
	}
	if err := acquireSubreaper(); err != nil {
		return 0, -1, err
	}
	pidfd = -1
	attr.Sys.Pdeathsig = syscall.SIGKILL
	attr.Sys.PidFD = &pidfd
	if !opts.NoCgroup {
		name := opts.Cgroup
		if name == "" {
			name = "governor-" + t.id
		}
		if t.cg = newCgroup(name); t.cg != nil {
			attr.Sys.UseCgroupFD, attr.Sys.CgroupFD = true, t.cg.fd
		}
	}
	pid, err = forkExec(path, argv, attr)
	if err != nil && t.cg != nil {
		// The kernel may refuse to clone into the group (no clone3, a
		// seccomp filter): go without it.
		t.cg.remove()
		t.cg = nil
		attr.Sys.UseCgroupFD, attr.Sys.CgroupFD = false, 0
		pidfd = -1
		pid, err = forkExec(path, argv, attr)
	}
	if err == nil && pidfd < 0 {
		// No CLONE_PIDFD. The child is ours and unreaped, so its pid is
		// still its own and pidfd_open is safe.
		if pidfd, err = unix.PidfdOpen(pid, 0); err != nil {
			_ = unix.Kill(-pid, unix.SIGKILL)
			var ws unix.WaitStatus
			_, _ = unix.Wait4(pid, &ws, 0, nil)
			err = fmt.Errorf("supervise: pidfd_open: %w", err)
		}
	} else if err != nil {
		err = execError(name, path, opts.Dir, err)
	}
	if err != nil {
		t.releaseExtras()
		return 0, -1, err
	}
	return pid, pidfd, nil
}

// releaseExtras gives back what launch took for the tree: its cgroup and
// its share of the process's subreaper role.
func (t *Tree) releaseExtras() {
	if t.portable {
		return
	}
	if t.cg != nil {
		t.cg.remove()
	}
	releaseSubreaper()
}

// waitLeader waits until the leader has exited, without reaping it
// (WNOWAIT): until it is reaped its pid, and so the process-group id,
// cannot be reused.
func (t *Tree) waitLeader(pidfd int) error {
	var info unix.Siginfo
	for {
		var err error
		if pidfd >= 0 {
			err = unix.Waitid(unix.P_PIDFD, pidfd, &info, unix.WEXITED|unix.WNOWAIT, nil)
		} else {
			// By pid is safe: the leader is our unreaped child.
			err = unix.Waitid(unix.P_PID, t.pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		}
		if err != unix.EINTR {
			return err
		}
	}
}

// openPidfd opens a pidfd for the process s describes, if the pidfd
// provably refers to that process: its start time still matches once the
// pidfd is open.
func openPidfd(s proc.Info) (int, bool) {
	fd, err := proc.OpenPidfd(s.PID, s.Start)
	if err != nil {
		return -1, false
	}
	if unix.PidfdSendSignal(fd, 0, nil, 0) != nil {
		unix.Close(fd)
		return -1, false
	}
	return fd, true
}

func pidfdSignal(fd int, sig syscall.Signal) error { return unix.PidfdSendSignal(fd, sig, nil, 0) }

func closePidfd(fd int) { unix.Close(fd) }

// pidfdJobStop consumes a report that the leader, whose pidfd is fd, was
// stopped by a signal, and returns that signal. WSTOPPED without WEXITED
// never reaps the leader.
func pidfdJobStop(fd int) (syscall.Signal, bool) {
	var info unix.Siginfo
	if unix.Waitid(unix.P_PIDFD, fd, &info, unix.WSTOPPED|unix.WNOHANG, nil) != nil {
		return 0, false
	}
	pid, status := childInfo(&info)
	if pid == 0 || info.Code != cldStopped {
		return 0, false // nothing to report
	}
	return syscall.Signal(status), true
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

// getTermios is the ioctl that reads a terminal's settings.
const getTermios = unix.TCGETS

// forker runs every fork of the package on one goroutine locked to its OS
// thread for the life of the process. The kernel sends the parent-death
// signal when the thread that created the child exits, not the process, and
// the Go runtime does retire threads (a goroutine that exits while locked to
// its thread takes the thread with it). A thread that never exits makes
// Pdeathsig mean "when this process dies". This is process-wide state by
// nature, hence a package-level value rather than a field.
var forker struct {
	once sync.Once
	reqs chan forkRequest
}

type forkRequest struct {
	path  string
	argv  []string
	attr  *syscall.ProcAttr
	reply chan forkResult
}

type forkResult struct {
	pid int
	err error
}

func forkExec(path string, argv []string, attr *syscall.ProcAttr) (int, error) {
	forker.once.Do(func() {
		forker.reqs = make(chan forkRequest)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread must outlive every child
			for r := range forker.reqs {
				pid, err := syscall.ForkExec(r.path, r.argv, r.attr)
				r.reply <- forkResult{pid, err}
			}
		}()
	})
	reply := make(chan forkResult, 1)
	forker.reqs <- forkRequest{path, argv, attr, reply}
	r := <-reply
	return r.pid, r.err
}

// subreaper counts the running trees; the process is a child subreaper while
// there is at least one, so that orphans of a tree come back to it. If the
// process was a subreaper before the first tree, it stays one.
var subreaper struct {
	mu    sync.Mutex
	trees int
	ours  bool
}

func acquireSubreaper() error {
	subreaper.mu.Lock()
	defer subreaper.mu.Unlock()
	if subreaper.trees == 0 {
		var on int32
		if err := unix.Prctl(unix.PR_GET_CHILD_SUBREAPER, uintptr(unsafe.Pointer(&on)), 0, 0, 0); err != nil {
			return fmt.Errorf("supervise: PR_GET_CHILD_SUBREAPER: %w", err)
		}
		if on == 0 {
			if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
				return fmt.Errorf("supervise: PR_SET_CHILD_SUBREAPER: %w", err)
			}
			subreaper.ours = true
		}
	}
	subreaper.trees++
	return nil
}

func releaseSubreaper() {
	subreaper.mu.Lock()
	defer subreaper.mu.Unlock()
	subreaper.trees--
	if subreaper.trees == 0 && subreaper.ours {
		_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
		subreaper.ours = false
	}
}
