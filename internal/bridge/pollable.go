package bridge

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// pollable returns in read through the runtime's poller when it is a
// pipe in blocking mode (a client's stdin): a read waiting for the next
// request then parks a goroutine, where a blocking read holds a thread
// in a system call, to be woken and to take a processor back for each
// request (and keeps the runtime's monitor polling). It reads a
// non-blocking duplicate of the descriptor; restore puts the pipe back
// in blocking mode (the mode is the pipe's, shared with in) and closes
// the duplicate. Anything else is returned as it is.
func pollable(in io.Reader) (r io.Reader, restore func()) {
	none := func() {}
	f, ok := in.(*os.File)
	if !ok {
		return in, none
	}
	if st, err := f.Stat(); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		return in, none
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return in, none
	}
	dup := -1
	if err := rc.Control(func(fd uintptr) {
		flags, err := unix.FcntlInt(fd, unix.F_GETFL, 0)
		if err != nil || flags&unix.O_NONBLOCK != 0 {
			return // already non-blocking: os.File polls it if it can
		}
		if d, err := unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0); err == nil {
			dup = d
		}
	}); err != nil || dup < 0 {
		return in, none
	}
	if err := unix.SetNonblock(dup, true); err != nil {
		_ = unix.Close(dup)
		return in, none
	}
	pf := os.NewFile(uintptr(dup), f.Name())
	return pf, func() {
		_ = unix.SetNonblock(dup, false)
		_ = pf.Close()
	}
}
