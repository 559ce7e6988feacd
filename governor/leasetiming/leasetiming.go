// Package leasetiming is how a lease lives, in one place: the backend
// expires it TTL after its last grant or renewal; its holder renews it
// every Heartbeat and declares it lost SafetyMargin before the backend
// would expire it. It decides the relations between the three, with the
// defaults derived from a TTL; governor.New, config, the runner and the
// CLI ask it. A leaf: it imports only the standard library.
package leasetiming

import (
	"fmt"
	"time"
)

// The bounds and defaults of a lease's timing.
const (
	MinTTL     = 100 * time.Millisecond
	MaxTTL     = 24 * time.Hour
	DefaultTTL = 30 * time.Second // a Governor's TTL when its Options set none
	// DefaultHeartbeat caps the heartbeat derived from a TTL: a lease
	// renews every TTL/3, and at least every DefaultHeartbeat.
	DefaultHeartbeat = 10 * time.Second
)

// Timing is how a lease lives: the backend expires it TTL after its last
// grant or renewal; its holder renews it every Heartbeat, and declares it
// lost SafetyMargin before the backend would expire it, so that the
// holder learns of a loss before anyone else can be granted the slot.
type Timing struct {
	TTL          time.Duration
	Heartbeat    time.Duration // 0: the lease does not heartbeat (NoHeartbeat)
	SafetyMargin time.Duration
}

// HeartbeatFor is the heartbeat derived from ttl: the shorter of
// ttl/3 and DefaultHeartbeat.
func HeartbeatFor(ttl time.Duration) time.Duration { return min(DefaultHeartbeat, ttl/3) }

// SafetyMarginFor is the safety margin derived from ttl: ttl/5.
func SafetyMarginFor(ttl time.Duration) time.Duration { return ttl / 5 }

// Names spell the three values in the messages of an *Error:
// the library's names ("TTL", "heartbeat", "safety margin") for the zero
// value, a configuration's keys ("lease.ttl", …) for config.
type Names struct {
	TTL, Heartbeat, SafetyMargin string
}

var libraryNames = Names{TTL: "TTL", Heartbeat: "heartbeat", SafetyMargin: "safety margin"}

func (n Names) orDefault() Names {
	if n.TTL == "" {
		n.TTL = libraryNames.TTL
	}
	if n.Heartbeat == "" {
		n.Heartbeat = libraryNames.Heartbeat
	}
	if n.SafetyMargin == "" {
		n.SafetyMargin = libraryNames.SafetyMargin
	}
	return n
}

// Error is a lease timing the rules refuse (governor wraps it in
// governor.ErrInvalid).
type Error struct {
	Field string        // the bad value, as Names spell it
	Value time.Duration // the bad value
	// Msg starts with the bad value and says what is wrong and what is
	// allowed, naming the other values as Names spell them.
	Msg string
}

func (e *Error) Error() string { return e.Field + " " + e.Msg }

// Resolve returns t with every zero field derived — TTL DefaultTTL,
// SafetyMargin SafetyMarginFor(TTL), Heartbeat
// HeartbeatFor(TTL) — and checked by Check. It fails with a
// *Error.
func (t Timing) Resolve(names Names) (Timing, error) {
	if t.TTL == 0 {
		t.TTL = DefaultTTL
	}
	if err := checkTTL(t.TTL, names.orDefault()); err != nil {
		return Timing{}, err
	}
	if t.SafetyMargin == 0 {
		t.SafetyMargin = SafetyMarginFor(t.TTL)
	}
	if t.Heartbeat == 0 {
		t.Heartbeat = HeartbeatFor(t.TTL)
	}
	if err := t.Check(names); err != nil {
		return Timing{}, err
	}
	return t, nil
}

// Check checks a timing as it is, deriving nothing: TTL from MinTTL to
// MaxTTL; SafetyMargin from 0 to less than TTL; Heartbeat longer than 0
// and shorter than TTL minus SafetyMargin, so that a holder renews before
// it would have to declare its lease lost. It returns nil or a
// *Error for the first bad value, in that order.
func (t Timing) Check(names Names) error {
	n := names.orDefault()
	if err := checkTTL(t.TTL, n); err != nil {
		return err
	}
	if t.SafetyMargin < 0 || t.SafetyMargin >= t.TTL {
		return &Error{Field: n.SafetyMargin, Value: t.SafetyMargin,
			Msg: fmt.Sprintf("%v is not allowed; the safety margin must be 0 or more and shorter than %s %v, such as a fifth of it (%v)",
				t.SafetyMargin, n.TTL, t.TTL, SafetyMarginFor(t.TTL))}
	}
	return t.checkHeartbeat(n)
}

// CheckTTL checks a TTL alone (a lease that does not heartbeat lives by
// its TTL and renewals by handle): from MinTTL to MaxTTL, else an *Error.
func CheckTTL(ttl time.Duration, names Names) error {
	return checkTTL(ttl, names.orDefault())
}

func (t Timing) checkHeartbeat(n Names) error {
	third := t.TTL / 3
	switch {
	case t.Heartbeat <= 0:
		return &Error{Field: n.Heartbeat, Value: t.Heartbeat,
			Msg: fmt.Sprintf("%v is not allowed; the heartbeat must be longer than 0 and shorter than %s, such as %v",
				t.Heartbeat, n.TTL, HeartbeatFor(t.TTL))}
	case t.Heartbeat >= t.TTL:
		return &Error{Field: n.Heartbeat, Value: t.Heartbeat,
			Msg: fmt.Sprintf("%v is not shorter than %s %v; a holder must renew well before its lease expires, so use a heartbeat of about a third of the TTL (%v)",
				t.Heartbeat, n.TTL, t.TTL, third)}
	case t.Heartbeat >= t.TTL-t.SafetyMargin:
		return &Error{Field: n.Heartbeat, Value: t.Heartbeat,
			Msg: fmt.Sprintf("%v is not shorter than %s %v minus %s %v (%v); a holder must renew before it has to declare its lease lost, so use a heartbeat of about a third of the TTL (%v)",
				t.Heartbeat, n.TTL, t.TTL, n.SafetyMargin, t.SafetyMargin, t.TTL-t.SafetyMargin, third)}
	}
	return nil
}

func checkTTL(ttl time.Duration, n Names) error {
	switch {
	case ttl <= 0:
		return &Error{Field: n.TTL, Value: ttl,
			Msg: fmt.Sprintf("%v is not allowed; the TTL must be longer than 0, such as %v", ttl, DefaultTTL)}
	case ttl < MinTTL || ttl > MaxTTL:
		return &Error{Field: n.TTL, Value: ttl,
			Msg: fmt.Sprintf("%v is not allowed; the TTL must be from %v to %v, such as %v", ttl, MinTTL, MaxTTL, DefaultTTL)}
	}
	return nil
}
