//go:build governor_faults

package filebackend

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// stopSelf stops the process before the calling thread runs on. A
// SIGSTOP sent to the process wakes one thread of the kernel's choice
// to take it, and the caller's thread runs on until that one has been
// scheduled: on a loaded machine it finished the state write, let the
// lock go and stopped outside it (1 run in 30 beside busy loops, its
// flocks shared ones only). Sent to the calling thread, the stop is
// taken as the kill(2) returns.
func stopSelf() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	_ = unix.Tgkill(unix.Getpid(), unix.Gettid(), unix.SIGSTOP)
}
