package governor

import (
	"fmt"
	"time"
)

// DefaultHeartbeat caps the heartbeat derived from a TTL: a lease renews
// every TTL/3, and at least every DefaultHeartbeat.
const DefaultHeartbeat = 10 * time.Second

// LeaseTiming is how a lease lives: the backend expires it TTL after its
// last grant or renewal; its holder renews it every Heartbeat, and
// declares it lost SafetyMargin before the backend would expire it, so
// that the holder learns of a loss before anyone else can be granted the
// slot. This file is the one place the relations between the three are
// decided; config, the runner and the CLI ask it.
type LeaseTiming struct {
	TTL          time.Duration
	Heartbeat    time.Duration // 0: the lease does not heartbeat (NoHeartbeat)
	SafetyMargin time.Duration
}

// DefaultHeartbeatFor is the heartbeat derived from ttl: the shorter of
// ttl/3 and DefaultHeartbeat.
func DefaultHeartbeatFor(ttl time.Duration) time.Duration { return min(DefaultHeartbeat, ttl/3) }

// DefaultSafetyMarginFor is the safety margin derived from ttl: ttl/5.
func DefaultSafetyMarginFor(ttl time.Duration) time.Duration { return ttl / 5 }

// TimingNames spell the three values in the messages of a *TimingError:
// the library's names ("TTL", "heartbeat", "safety margin") for the zero
// value, a configuration's keys ("lease.ttl", …) for config.
type TimingNames struct {
	TTL, Heartbeat, SafetyMargin string
}

var libraryNames = TimingNames{TTL: "TTL", Heartbeat: "heartbeat", SafetyMargin: "safety margin"}

func (n TimingNames) orDefault() TimingNames {
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

// TimingError is a lease timing the rules refuse. errors.Is(err,
// ErrInvalid) is true.
type TimingError struct {
	Field string        // the bad value, as TimingNames spell it
	Value time.Duration // the bad value
	// Msg starts with the bad value and says what is wrong and what is
	// allowed, naming the other values as TimingNames spell them.
	Msg string
}

func (e *TimingError) Error() string { return fmt.Sprintf("%v: %s %s", ErrInvalid, e.Field, e.Msg) }

// Unwrap makes errors.Is(err, ErrInvalid) true.
func (e *TimingError) Unwrap() error { return ErrInvalid }

// resolve returns t with every zero field derived — TTL DefaultTTL,
// SafetyMargin DefaultSafetyMarginFor(TTL), Heartbeat
// DefaultHeartbeatFor(TTL) — and checked by Check. It fails with a
// *TimingError.
func (t LeaseTiming) resolve(names TimingNames) (LeaseTiming, error) {
	if t.TTL == 0 {
		t.TTL = DefaultTTL
	}
	if err := checkTTL(t.TTL, names.orDefault()); err != nil {
		return LeaseTiming{}, err
	}
	if t.SafetyMargin == 0 {
		t.SafetyMargin = DefaultSafetyMarginFor(t.TTL)
	}
	if t.Heartbeat == 0 {
		t.Heartbeat = DefaultHeartbeatFor(t.TTL)
	}
	if err := t.Check(names); err != nil {
		return LeaseTiming{}, err
	}
	return t, nil
}

// Check checks a timing as it is, deriving nothing: TTL from MinTTL to
// MaxTTL; SafetyMargin from 0 to less than TTL; Heartbeat longer than 0
// and shorter than TTL minus SafetyMargin, so that a holder renews before
// it would have to declare its lease lost. It returns nil or a
// *TimingError for the first bad value, in that order.
func (t LeaseTiming) Check(names TimingNames) error {
	n := names.orDefault()
	if err := checkTTL(t.TTL, n); err != nil {
		return err
	}
	if t.SafetyMargin < 0 || t.SafetyMargin >= t.TTL {
		return &TimingError{Field: n.SafetyMargin, Value: t.SafetyMargin,
			Msg: fmt.Sprintf("%v is not allowed; the safety margin must be 0 or more and shorter than %s %v, such as a fifth of it (%v)",
				t.SafetyMargin, n.TTL, t.TTL, DefaultSafetyMarginFor(t.TTL))}
	}
	return t.checkHeartbeat(n)
}

// checkDetached checks the timing of a lease that does not heartbeat: it
// lives by its TTL and renewals by handle, so only the TTL is checked.
func (t LeaseTiming) checkDetached(names TimingNames) error {
	return checkTTL(t.TTL, names.orDefault())
}

func (t LeaseTiming) checkHeartbeat(n TimingNames) error {
	third := t.TTL / 3
	switch {
	case t.Heartbeat <= 0:
		return &TimingError{Field: n.Heartbeat, Value: t.Heartbeat,
			Msg: fmt.Sprintf("%v is not allowed; the heartbeat must be longer than 0 and shorter than %s, such as %v",
				t.Heartbeat, n.TTL, DefaultHeartbeatFor(t.TTL))}
	case t.Heartbeat >= t.TTL:
		return &TimingError{Field: n.Heartbeat, Value: t.Heartbeat,
			Msg: fmt.Sprintf("%v is not shorter than %s %v; a holder must renew well before its lease expires, so use a heartbeat of about a third of the TTL (%v)",
				t.Heartbeat, n.TTL, t.TTL, third)}
	case t.Heartbeat >= t.TTL-t.SafetyMargin:
		return &TimingError{Field: n.Heartbeat, Value: t.Heartbeat,
			Msg: fmt.Sprintf("%v is not shorter than %s %v minus %s %v (%v); a holder must renew before it has to declare its lease lost, so use a heartbeat of about a third of the TTL (%v)",
				t.Heartbeat, n.TTL, t.TTL, n.SafetyMargin, t.SafetyMargin, t.TTL-t.SafetyMargin, third)}
	}
	return nil
}

func checkTTL(ttl time.Duration, n TimingNames) error {
	switch {
	case ttl <= 0:
		return &TimingError{Field: n.TTL, Value: ttl,
			Msg: fmt.Sprintf("%v is not allowed; the TTL must be longer than 0, such as %v", ttl, DefaultTTL)}
	case ttl < MinTTL || ttl > MaxTTL:
		return &TimingError{Field: n.TTL, Value: ttl,
			Msg: fmt.Sprintf("%v is not allowed; the TTL must be from %v to %v, such as %v", ttl, MinTTL, MaxTTL, DefaultTTL)}
	}
	return nil
}
