package proc

import (
	"errors"
	"syscall"
)

// killChecked sends sig to pid after checking that pid still names the
// process that started at start; it returns ErrNoProcess if it does not.
// This is what macOS offers (no pidfds): the PID could be reused between
// the check and kill(2) only if the process exited and the system cycled
// through its whole PID space within those microseconds.
func killChecked(pid int, start uint64, sig syscall.Signal) error {
	if pid <= 0 {
		return ErrNoProcess
	}
	s, err := Stat(pid)
	if gone(err) || err == nil && s.Start != start {
		return ErrNoProcess
	}
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, sig); errors.Is(err, syscall.ESRCH) {
		return ErrNoProcess
	} else {
		return err
	}
}
