package governor

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/governor-dev/governor/governor/eventkind"
	"github.com/governor-dev/governor/governor/safetext"
)

var (
	// ErrBusy is matched (errors.Is) by a *BusyError: the resource had no
	// room and the caller asked not to wait; and by a rate's or a spend
	// budget's refusal (*RateBusyError, *BudgetBusyError).
	ErrBusy = errors.New("governor: resource busy")
	// ErrLeaseLost reports a lease that is no longer held: it expired, was
	// reclaimed or taken over. Work protected by it must stop.
	ErrLeaseLost = errors.New("governor: lease lost")
	// ErrNotHeld reports a release or renew of a lease the backend does not
	// know (already released, expired, or never granted).
	ErrNotHeld = errors.New("governor: lease not held")
	// ErrNotOwner refuses a renewal, release or cancel whose secret does
	// not prove the lease id (see OwnerProven): the lease id is public,
	// its secret is what proves ownership. Nothing changes.
	ErrNotOwner = errors.New("governor: not the lease's owner")
	// ErrInvalid is wrapped by every error about bad input: names, weights,
	// limits, durations.
	ErrInvalid = errors.New("governor: invalid argument")
	// ErrTooHeavy reports a weight above the limit in force: it could never
	// be granted.
	ErrTooHeavy = errors.New("governor: weight above limit")
	// ErrStaleToken reports a fenced write (a sequence number) by a
	// holder whose token is older than one already used: its lease was
	// taken over or expired.
	ErrStaleToken = errors.New("governor: stale fencing token")
	// ErrOwnerAlive refuses a takeover of a lease whose owner is not
	// proven dead and has not expired (use Force to override).
	ErrOwnerAlive = errors.New("governor: lease owner is alive")
	// ErrBackend reports a backend that answered with an error retrying
	// cannot cure: a script error, a key of the wrong type, a permission
	// denied. Transport failures (timeouts, refused connections) are not
	// ErrBackend.
	ErrBackend = errors.New("governor: backend error")
	// ErrClosed reports use of a closed Governor or backend.
	ErrClosed = errors.New("governor: closed")
	// ErrQueueFull refuses a waiter because the resource's queue holds
	// max_queue waiters already (see Policy). Nothing is left queued.
	ErrQueueFull = errors.New("governor: queue full")
	// ErrMaxWait is matched by the *WithdrawnError of a waiter dropped
	// from the queue because it waited the resource's max_wait (see
	// Policy; kind eventkind.MaxWait). Nothing is left queued.
	ErrMaxWait = errors.New("governor: dropped from the queue after max_wait")
	// ErrSuperseded is matched by the *WithdrawnError of a waiter replaced
	// by a newer acquire with its supersede key (AcquireOptions.Supersede;
	// kind eventkind.Superseded). Nothing is left queued.
	ErrSuperseded = errors.New("governor: superseded")
)

// BusyError is returned by a fail-mode acquire that found no room. It
// carries the resource's state at the time of the refusal so the caller
// can say who holds it. errors.Is(err, ErrBusy) is true.
type BusyError struct {
	Resource string
	Status   Status
	// Rule, when set, names the rule that refused although the slots
	// asked for were free: a class's cap, a fair key's fair_cap, a higher
	// class's reserve, waiters queued ahead (see Governor.whyRefused);
	// "" when there was no room (Status says it), when paused
	// (Status.Paused) or cooling off (Status.CoolingOff).
	Rule string
}

func (e *BusyError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "governor: %s busy: %d of %d in use", e.Resource, e.Status.Used, e.Status.Limit)
	if c := e.Status.CoolingOff(); c != "" {
		b.WriteString(", " + c)
	}
	if q := e.Status.Quarantined(); q != "" {
		b.WriteString(", " + q)
	}
	if n := e.Status.QueueLen(); n > 0 {
		fmt.Fprintf(&b, ", %d waiting", n)
	}
	if p := e.Status.Paused; p != nil {
		fmt.Fprintf(&b, ", paused by %s", safetext.Escape(p.By))
	}
	if e.Rule != "" {
		fmt.Fprintf(&b, "; refused by %s", e.Rule)
	}
	for i, h := range e.Status.Holders {
		if i == 3 {
			fmt.Fprintf(&b, "; and %d more", len(e.Status.Holders)-i)
			break
		}
		fmt.Fprintf(&b, "; held by %s", h.Describe(e.Status.Now))
	}
	return b.String()
}

// Is makes errors.Is(err, ErrBusy) hold.
func (e *BusyError) Is(target error) bool { return target == ErrBusy }

// LeaseLostError is ErrLeaseLost with what ended the lease, as the
// backend recorded it: a renewal refused after a takeover names the
// session that took the lease. errors.Is(err, ErrLeaseLost) is true.
type LeaseLostError struct {
	Resource string
	LeaseID  string
	// End is the event that ended the lease: eventkind.Takeover,
	// eventkind.Reclaimed or eventkind.Expired.
	End Event
}

func (e *LeaseLostError) Error() string {
	return fmt.Sprintf("governor: lease %s of %s lost: %s", e.LeaseID, e.Resource, e.Reason())
}

// Reason says what ended the lease, for people and for the lost event.
// The detail came from the backend (the taker wrote it): it is escaped for
// a terminal.
func (e *LeaseLostError) Reason() string {
	detail := safetext.Escape(e.End.Detail)
	switch e.End.Kind {
	case eventkind.Takeover:
		return detail // "taken over by session S (pid P on H): lease L, token T"
	case eventkind.Reclaimed:
		return "reclaimed: " + detail
	case eventkind.Expired:
		return "it expired before it was renewed"
	}
	return safetext.Escape(e.End.Kind) + ": " + detail
}

// Is makes errors.Is(err, ErrLeaseLost) hold.
func (e *LeaseLostError) Is(target error) bool { return target == ErrLeaseLost }

// Why a holder declared its lease lost, when no event of the backend
// says more (see LeaseLostError).
const (
	lostNoRenewal = "the holder could not renew in time"
	lostRefused   = "its renewal was refused: the backend no longer holds it"
)

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// ErrWithdrawn is matched (errors.Is) by a *WithdrawnError: a waiting
// acquire whose queue entry someone else withdrew.
var ErrWithdrawn = errors.New("governor: waiter withdrawn")

// WithdrawnError ends a waiting acquire whose queue entry was withdrawn
// by someone else (Governor.Cancel, or a queue policy): the backend
// recorded why as an event (an Action), and the waiter's next poll
// found its entry gone and read that event. Nothing of the waiter is
// left behind. errors.Is(err, ErrWithdrawn) is true.
type WithdrawnError struct {
	Resource string
	WaiterID string
	// Kind is the event kind that withdrew it (eventkind.Cancelled, or a
	// queue policy's), By who did it, Detail why, At when (backend
	// clock).
	Kind   string
	By     string
	Detail string
	At     time.Time
}

func (e *WithdrawnError) Error() string {
	return fmt.Sprintf("governor: waiter %s of %s withdrawn: %s", e.WaiterID, e.Resource, e.Reason())
}

// Reason says what withdrew the waiter and who: "cancelled by alice
// (session s, pid 1 on h): cancelled by an operator". By and Detail came
// from the backend: they are escaped for a terminal.
func (e *WithdrawnError) Reason() string {
	var b strings.Builder
	b.WriteString(safetext.Escape(e.Kind))
	if e.By != "" {
		fmt.Fprintf(&b, " by %s", safetext.Escape(e.By))
	}
	if e.Detail != "" {
		fmt.Fprintf(&b, ": %s", safetext.Escape(e.Detail))
	}
	return b.String()
}

// Is makes errors.Is(err, ErrWithdrawn) hold, and for a queue policy's
// withdrawals errors.Is(err, ErrSuperseded) (kind eventkind.Superseded) and
// errors.Is(err, ErrMaxWait) (kind eventkind.MaxWait).
func (e *WithdrawnError) Is(target error) bool {
	return target == ErrWithdrawn || target == ErrSuperseded && e.Kind == eventkind.Superseded ||
		target == ErrMaxWait && e.Kind == eventkind.MaxWait
}
