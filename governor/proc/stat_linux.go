package proc

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

var errBadStat = errors.New("proc: unparsable /proc stat")

// Stat reads /proc/PID/stat. It fails with ErrNoProcess when the process
// is gone. The kernel makes the whole file at the first read,
// so one read into a buffer larger than any stat line is the whole file:
// a List of the machine makes three system calls per process.
func Stat(pid int) (Info, error) {
	var buf [1024]byte
	fd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/stat", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err == unix.ENOENT {
		return Info{}, ErrNoProcess
	}
	if err != nil {
		return Info{}, err
	}
	n, err := unix.Read(fd, buf[:])
	unix.Close(fd)
	if err == unix.ESRCH {
		return Info{}, ErrNoProcess // exited between open and read
	}
	if err != nil {
		return Info{}, err
	}
	if n == len(buf) {
		return Info{}, errBadStat
	}
	return parseStat(pid, buf[:n])
}

// parseStat parses the content of /proc/PID/stat. The command name, in
// parentheses, may itself contain spaces and parentheses, so fields are
// counted from the last ')'.
func parseStat(pid int, b []byte) (Info, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return Info{}, errBadStat
	}
	// Fields after the name: state ppid pgrp session tty_nr tpgid flags
	// minflt cminflt majflt cmajflt utime stime cutime cstime priority nice
	// num_threads itrealvalue starttime ...
	f := strings.Fields(string(b[i+2:]))
	if len(f) < 20 || len(f[0]) != 1 {
		return Info{}, errBadStat
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgid, err2 := strconv.Atoi(f[2])
	start, err3 := strconv.ParseUint(f[19], 10, 64)
	if err := errors.Join(err1, err2, err3); err != nil {
		return Info{}, errBadStat
	}
	return Info{PID: pid, PPID: ppid, PGID: pgid, State: f[0][0], Start: start}, nil
}

// List reads the stat of every process on the machine. It is not atomic:
// processes come and go while it reads, so callers repeat it until the
// part they care about no longer changes. (/proc/PID/task/TID/children
// would be cheaper but needs CONFIG_PROC_CHILDREN, which many kernels
// lack.)
func List() ([]Info, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	out := make([]Info, 0, len(names))
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil || pid <= 0 {
			continue
		}
		s, err := Stat(pid)
		if err != nil {
			continue // gone since the directory was read
		}
		out = append(out, s)
	}
	return out, nil
}

// environ returns the initial environment of pid, NUL-separated.
func environ(pid int) ([]byte, error) {
	return ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
}

// BootID names this boot of the kernel; "" when unknown.
func BootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// HostID names this kernel boot and PID namespace. Two processes with the
// same HostID see the same PIDs; a PID proof is valid only between them.
func HostID() string {
	boot := BootID()
	if boot == "" {
		return ""
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	return boot + "/" + ns
}

// OpenPidfd opens a pidfd for pid if pid still names the process that
// started at start: its start time still matches once the pidfd is open,
// so the pidfd refers to that process whatever becomes of the pid. It
// returns ErrNoProcess if it does not (gone, or the pid reused).
func OpenPidfd(pid int, start uint64) (int, error) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err == unix.ESRCH {
		return -1, ErrNoProcess
	}
	if err != nil {
		return -1, err
	}
	if s, err := Stat(pid); err != nil || s.Start != start {
		unix.Close(fd)
		return -1, ErrNoProcess
	}
	return fd, nil
}

// Kill sends sig to pid if pid still names the process that started at
// start, and returns ErrNoProcess if it does not. Unless Portable, the
// signal goes through a pidfd opened between two reads of the start time
// (OpenPidfd), so a PID reused at any moment is never signalled; otherwise
// see killChecked.
func Kill(pid int, start uint64, sig syscall.Signal) error {
	if Portable() {
		return killChecked(pid, start, sig)
	}
	fd, err := OpenPidfd(pid, start)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.PidfdSendSignal(fd, sig, nil, 0)
}

// Exited returns a channel closed when the process pid, started at start,
// has ended (exited, even if not yet reaped), watched with no polling: a
// pidfd in Go's poller. stop ends the watch (the channel then stays
// open). Where it cannot watch so (Portable, a kernel without pidfds)
// it returns errors.ErrUnsupported, and the caller polls (Check).
func Exited(pid int, start uint64) (gone <-chan struct{}, stop func(), err error) {
	if Portable() {
		return nil, nil, errors.ErrUnsupported
	}
	ch := make(chan struct{})
	fd, err := OpenPidfd(pid, start)
	if errors.Is(err, ErrNoProcess) { // gone, or its pid reused
		close(ch)
		return ch, func() {}, nil
	}
	if err != nil {
		return nil, nil, errors.ErrUnsupported
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, nil, errors.ErrUnsupported
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, nil, errors.ErrUnsupported
	}
	go func() {
		// A pidfd reads as ready once its process has ended; Read waits
		// in the poller until then.
		err := rc.Read(func(fd uintptr) bool {
			n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 0)
			return err == nil && n > 0
		})
		if err == nil {
			close(ch)
		}
	}()
	return ch, func() { f.Close() }, nil
}
