// Package exitcode is the one mapping from an error to the exit code of
// a governor command (SPEC §4): every command, `governor run` and the
// language bridge ask For, so that one failure has one code wherever it
// surfaces.
package exitcode

import (
	"errors"
	"fmt"

	"github.com/governor-dev/governor/governor"
)

// The exit codes of governor's commands besides a run command's own.
const (
	OK         = 0
	Busy       = 73  // not acquired: busy with --if-busy fail, --wait-timeout passed, a queue bound, the wait withdrawn; a refused takeover, a stale token
	Skipped    = 75  // busy with --if-busy skip
	Superseded = 76  // a newer waiter with the same --supersede key replaced this one
	LeaseLost  = 122 // a lease was lost (while running: the command was stopped)
	Timeout    = 124 // --timeout passed; the command tree was stopped
	Failure    = 125 // governor's own failure: bad flags, config, backend unreachable
	CannotExec = 126 // the command cannot be executed
	NotFound   = 127 // the command was not found
)

// Error carries an exit code decided by the caller, for a failure whose
// code depends on the command (ErrNotHeld is 122 for release and 73 for
// takeover). Err, if set, is what is reported; a nil Err reports nothing.
type Error struct {
	Code int
	Err  error
}

func (e *Error) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit %d", e.Code)
	}
	return e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// With returns an error that For maps to code, reporting err (nil: only
// the code).
func With(code int, err error) error { return &Error{Code: code, Err: err} }

// Coder is an error that knows its exit code (a run's NotAcquiredError:
// busy, skipped or superseded).
type Coder interface {
	error
	ExitCode() int
}

// For returns the exit code of err: 0 for nil; the code an *Error or a
// Coder carries (the outermost); else by the library's sentinel: busy,
// queue bounds, a withdrawn wait, a refused takeover and a stale token
// 73, superseded 76, a lost lease 122; anything else (bad input, the
// backend, a cancelled context) is governor's own failure, 125.
func For(err error) int {
	if err == nil {
		return OK
	}
	var e *Error
	var c Coder
	var busy *governor.BusyError
	var gone *governor.WithdrawnError
	switch {
	case errors.As(err, &e):
		return e.Code
	case errors.As(err, &c):
		return c.ExitCode()
	case errors.Is(err, governor.ErrSuperseded):
		return Superseded
	case errors.As(err, &busy), errors.As(err, &gone),
		errors.Is(err, governor.ErrQueueFull), errors.Is(err, governor.ErrMaxWait),
		errors.Is(err, governor.ErrOwnerAlive), errors.Is(err, governor.ErrStaleToken):
		return Busy
	case errors.Is(err, governor.ErrLeaseLost):
		return LeaseLost
	}
	return Failure
}

// Kind names code for machines (a record's or the bridge's "kind"): ok,
// busy, skipped, superseded, lost, timeout, failure, cannot-exec,
// not-found; "signal" for 128+N, "exit" for any other code (a command's
// own).
func Kind(code int) string {
	switch code {
	case OK:
		return "ok"
	case Busy:
		return "busy"
	case Skipped:
		return "skipped"
	case Superseded:
		return "superseded"
	case LeaseLost:
		return "lost"
	case Timeout:
		return "timeout"
	case Failure:
		return "failure"
	case CannotExec:
		return "cannot-exec"
	case NotFound:
		return "not-found"
	}
	if code > 128 && code < 128+65 {
		return "signal"
	}
	return "exit"
}
