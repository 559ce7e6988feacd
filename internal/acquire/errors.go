package acquire

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/governor-dev/governor/config"
	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/safetext"
	"github.com/governor-dev/governor/internal/exitcode"
)

// NotAcquiredError is the error of a run (or a `governor acquire`) that
// did not get its slots: busy with --if-busy fail (exit 73), busy with
// --if-busy skip (75), or not granted within --wait-timeout (73).
// errors.As finds Busy through it when the resource's state is known.
type NotAcquiredError struct {
	// Msg is one line, without the holders.
	Msg string
	// Busy is the refusal, or the resource's state when the wait timed
	// out; nil when unknown (a spent rate budget).
	Busy *governor.BusyError
	// Skipped is true for --if-busy skip: the expected outcome of a cron
	// job, told in one line.
	Skipped bool
	// Superseded is true for a waiter replaced by a newer one with its
	// --supersede key.
	Superseded bool
	// Budget is the spend budget that refused (a reservation that did
	// not fit), nil otherwise.
	Budget *governor.BudgetBusyError
	// Store are the global flags that select the store the refusal came
	// from, added to the 'governor takeover' hint so that pasting it acts
	// on the same store (the CLI sets them from its configuration).
	Store []config.StoreFlag
}

func (e *NotAcquiredError) Error() string { return e.Msg }

// ExitCode is the exit code of not acquiring (exitcode.For asks it):
// skipped, superseded, else busy.
func (e *NotAcquiredError) ExitCode() int {
	switch {
	case e.Skipped:
		return exitcode.Skipped
	case e.Superseded:
		return exitcode.Superseded
	}
	return exitcode.Busy
}

// Holders are what the report of e lists (words.Refusal): the holders
// of a refusal or of a wait that timed out, not of a skip.
func (e *NotAcquiredError) Holders() (*governor.BusyError, []config.StoreFlag) {
	if e.Skipped || e.Busy == nil {
		return nil, nil
	}
	return e.Busy, e.Store
}

func (e *NotAcquiredError) Unwrap() error {
	switch {
	case e.Busy != nil:
		return e.Busy
	case e.Budget != nil:
		return e.Budget
	}
	return nil
}

// reasoned is a backend's error that says why a wait could not end in
// time, beside the context's error it wraps: the file backend's
// LockWaitError names the holder of a resource's state lock.
type reasoned interface {
	error
	Reason() string
}

// failed is the error to report for an acquire that got no
// slots, for `governor run` and `governor acquire` alike; its exit code
// is exitcode.For's. ctx is the caller's own context, not the wait's:
// once it has ended (a signal), its error is reported. skip is --if-busy
// skip; waitTimeout the --wait-timeout; waitingFor the resource waited
// for when the wait timed out ("" when unknown), whose state, read with
// g, then lists the holders.
func failed(ctx context.Context, g *governor.Governor, err error, skip bool, waitTimeout time.Duration, waitingFor string) error {
	var busy *governor.BusyError
	var na *NotAcquiredError
	var gone *governor.WithdrawnError
	switch {
	case errors.As(err, &na) && na.Busy == nil: // a mkdir slot or a rate budget
		return na
	case errors.As(err, &busy):
		return Refused(busy, skip)
	case ctx.Err() != nil:
		return ctx.Err() // after a signal, acquire reports that instead
	case errors.Is(err, context.DeadlineExceeded):
		na := &NotAcquiredError{Msg: fmt.Sprintf("not acquired within --wait-timeout %v", waitTimeout)}
		var why reasoned
		if errors.As(err, &why) {
			na.Msg += ": " + why.Reason()
		}
		if waitingFor != "" {
			na.Msg = waitingFor + ": " + na.Msg
			sctx, cancel := context.WithTimeout(context.Background(), governor.DefaultReleaseTimeout)
			st, serr := g.Status(sctx, waitingFor)
			cancel()
			if serr == nil {
				na.Busy = &governor.BusyError{Resource: waitingFor, Status: st}
			}
		}
		return na
	case errors.Is(err, governor.ErrSuperseded):
		return &NotAcquiredError{Msg: err.Error(), Superseded: true}
	case errors.Is(err, governor.ErrQueueFull), errors.Is(err, governor.ErrMaxWait):
		// Not acquired, by the queue policy's bounds.
		return &NotAcquiredError{Msg: err.Error()}
	case errors.Is(err, governor.ErrTooHeavy):
		return fmt.Errorf("%w (the limit in force differs from the configured one: see 'governor slots')", err)
	case errors.As(err, &gone):
		// Withdrawn by someone ('governor cancel', a queue policy): say
		// who and why.
		return &NotAcquiredError{Msg: fmt.Sprintf("%s: not acquired: the wait was %s; nothing is held",
			gone.Resource, gone.Reason())}
	}
	return err
}

// Refused is the NotAcquiredError of a fail-mode refusal (skip false) or
// of a skip: one line naming the resource, its use and, for a skip, its
// first holder's session.
func Refused(busy *governor.BusyError, skip bool) *NotAcquiredError {
	st := busy.Status
	msg := fmt.Sprintf("%s is busy: %d of %d in use", busy.Resource, st.Used, st.Limit)
	if n := st.QueueLen(); n > 0 {
		msg += fmt.Sprintf(", %d waiting", n)
	}
	if p := st.Paused; p != nil {
		msg += fmt.Sprintf(", paused by %s: nothing new is granted until 'governor resume %s'", safetext.Escape(p.By), busy.Resource)
	}
	if c := st.CoolingOff(); c != "" {
		msg += ", " + c
	}
	if q := st.Quarantined(); q != "" {
		msg += ", " + q
	}
	if busy.Rule != "" {
		msg += "; refused by " + busy.Rule
	}
	if skip {
		if len(st.Holders) > 0 && st.Holders[0].Session != "" {
			msg += ", held by session " + safetext.Escape(st.Holders[0].Session)
			if n := len(st.Holders) - 1; n > 0 {
				msg += fmt.Sprintf(" and %d more", n)
			}
		}
		msg += "; skipped (--if-busy skip)"
	}
	return &NotAcquiredError{Msg: msg, Busy: busy, Skipped: skip}
}
