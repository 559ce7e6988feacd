package proc

import (
	"errors"
	"syscall"

	"golang.org/x/sys/unix"
)

// The p_stat values of <sys/proc.h>.
const (
	sIdl   = 1 // being created by fork
	sRun   = 2
	sSleep = 3
	sStop  = 4
	sZomb  = 5
)

// info converts what sysctl kern.proc tells of a process.
func info(k *unix.KinfoProc) Info {
	var state byte
	switch k.Proc.P_stat {
	case sIdl:
		state = 'I'
	case sRun:
		state = 'R'
	case sSleep:
		state = 'S'
	case sStop:
		state = 'T'
	case sZomb:
		state = 'Z'
	default:
		state = '?'
	}
	st := k.Proc.P_starttime
	return Info{
		PID:   int(k.Proc.P_pid),
		PPID:  int(k.Eproc.Ppid),
		PGID:  int(k.Eproc.Pgid),
		Start: uint64(st.Sec)*1_000_000 + uint64(st.Usec),
		State: state,
	}
}

// Stat reads the kinfo_proc of pid (sysctl kern.proc.pid.PID). It fails
// with ErrNoProcess when the process is gone: the kernel then returns no
// record, which x/sys/unix reports as EIO.
func Stat(pid int) (Info, error) {
	if pid <= 0 {
		return Info{}, ErrNoProcess
	}
	k, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if errors.Is(err, unix.EIO) || errors.Is(err, unix.ESRCH) || err == nil && int(k.Proc.P_pid) != pid {
		return Info{}, ErrNoProcess
	}
	if err != nil {
		return Info{}, err
	}
	return info(k), nil
}

// List reads the kinfo_proc of every process on the machine (sysctl
// kern.proc.all): one system call for the table, atomic as the kernel
// copies it, though processes may have come and gone since.
func List() ([]Info, error) {
	ks, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return nil, err
	}
	out := make([]Info, 0, len(ks))
	for i := range ks {
		if ks[i].Proc.P_pid > 0 {
			out = append(out, info(&ks[i]))
		}
	}
	return out, nil
}

// environ returns the initial environment of pid, NUL-separated, from
// sysctl kern.procargs2.PID: argc (a 32-bit int), the executable path,
// NUL padding, argc NUL-terminated arguments, then the environment. The
// kernel gives it for the caller's own processes only (root: all).
func environ(pid int) ([]byte, error) {
	b, err := unix.SysctlRaw("kern.procargs2", pid)
	if err != nil {
		return nil, err
	}
	return procargsEnv(b)
}

// BootID names this boot of the kernel (sysctl kern.bootsessionuuid);
// "" when unknown.
func BootID() string {
	id, err := unix.Sysctl("kern.bootsessionuuid")
	if err != nil {
		return ""
	}
	return id
}

// HostID names this boot of the kernel. macOS has no PID namespaces: the
// boot names the PID space.
func HostID() string { return BootID() }

// Kill sends sig to pid if pid still names the process that started at
// start, and returns ErrNoProcess if it does not. macOS has no pidfds:
// see killChecked.
func Kill(pid int, start uint64, sig syscall.Signal) error {
	return killChecked(pid, start, sig)
}

// Exited is not supported on macOS (no pidfds): the caller polls (Check).
func Exited(pid int, start uint64) (gone <-chan struct{}, stop func(), err error) {
	return nil, nil, errors.ErrUnsupported
}
