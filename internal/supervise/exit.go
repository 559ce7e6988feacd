package supervise

import "syscall"

// Exit is how the leader of a tree ended.
type Exit struct {
	// Code is the leader's exit status when it exited normally, and zero
	// when a signal killed it.
	Code int
	// Signal is the signal that killed the leader, zero when it exited
	// normally.
	Signal syscall.Signal
	// Stopped is the reason given to the first Stop call made while the
	// leader was still running (ErrStopped for a nil reason); nil when the
	// leader ended on its own, whatever Stop later did to descendants it
	// left behind.
	Stopped error
}

// ExitCode returns the exit code a shell would report for e: the leader's
// exit status, or 128+N when signal N killed it.
func ExitCode(e Exit) int {
	if e.Signal != 0 {
		return 128 + int(e.Signal)
	}
	return e.Code
}
