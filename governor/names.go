package governor

import (
	"errors"
	"fmt"
	"time"

	"github.com/governor-dev/governor/governor/leasetiming"
	"github.com/governor-dev/governor/governor/naming"
)

// Limits on names and numbers, checked before anything reaches a backend.
const (
	MaxLimit    = 1_000_000 // slots in one resource
	DefaultName = "default" // the project when none is given
)

// ValidateResource checks a resource name: 1 to naming.MaxNameLen bytes
// of printable UTF-8 with no white space, and none of the characters
// { } * ? [ ] \ that Redis gives meaning to in keys and patterns. It
// returns nil or an ErrInvalid wrapping a *naming.Error.
func ValidateResource(name string) error {
	return validateName("resource", name, naming.MaxNameLen)
}

// ValidateProject checks a project name: 1 to naming.MaxProject bytes of
// letters, digits, '.', '_' and '-', and not "." or ".." (a project names
// a directory of the file backend). It returns nil or an ErrInvalid
// wrapping a *naming.Error.
func ValidateProject(name string) error { return invalidName(naming.CheckProject(name)) }

// validateName is naming.Check as an ErrInvalid.
func validateName(what, name string, max int) error {
	return invalidName(naming.Check(what, name, max))
}

// invalidName is a name's refusal as an ErrInvalid (nil for nil).
func invalidName(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrInvalid, err)
}

// LockOrderError is one bad entry of Options.LockOrder. errors.Is(err,
// ErrInvalid) is true.
type LockOrderError struct {
	Index int
	Entry string
	First int   // for an entry listed twice, the index of its first listing; else -1
	Err   error // for an entry that is not a valid resource name, its *naming.Error; else nil
}

func (e *LockOrderError) Error() string {
	switch {
	case e.Entry == "":
		return fmt.Sprintf("%v: lock order entry %d is empty; entries are resource-name prefixes such as issue", ErrInvalid, e.Index)
	case e.First >= 0:
		return fmt.Sprintf("%v: lock order entry %d %q is listed twice (also entry %d); each prefix must appear once", ErrInvalid, e.Index, e.Entry, e.First)
	}
	return fmt.Sprintf("lock order entry %d: %v", e.Index, e.Err)
}

// Unwrap makes errors.Is(err, ErrInvalid) true.
func (e *LockOrderError) Unwrap() error { return ErrInvalid }

// ValidateLockOrder checks Options.LockOrder: every entry a valid
// resource name (a prefix of resource names), each listed once. It
// returns nil or every bad entry's *LockOrderError, joined.
func ValidateLockOrder(order []string) error {
	var errs []error
	first := map[string]int{}
	for i, p := range order {
		e := &LockOrderError{Index: i, Entry: p, First: -1}
		if j, dup := first[p]; dup {
			e.First = j
		} else {
			first[p] = i
			if p != "" {
				e.Err = ValidateResource(p)
			}
		}
		if p == "" || e.First >= 0 || e.Err != nil {
			errs = append(errs, e)
		}
	}
	return errors.Join(errs...)
}

// ValidateLimit checks the limit of resource name: 1 to MaxLimit slots.
func ValidateLimit(name string, limit int) error {
	if limit < 1 || limit > MaxLimit {
		return invalid("limit %d for %s; allowed: 1 to %d", limit, name, MaxLimit)
	}
	return nil
}

// ResolveWeight returns the slots an acquire of resource takes: weight
// (0: 1), or the whole limit when exclusive. A weight above the limit is
// ErrTooHeavy; a weight below 1, or one other than the limit with
// exclusive, is ErrInvalid.
func ResolveWeight(resource string, weight, limit int, exclusive bool) (int, error) {
	if exclusive {
		if weight != 0 && weight != limit {
			return 0, invalid("weight %d with exclusive for %s; exclusive takes the whole limit (%d)", weight, resource, limit)
		}
		weight = limit
	}
	if weight == 0 {
		weight = 1
	}
	if err := validateWeight(resource, weight, limit); err != nil {
		return 0, err
	}
	return weight, nil
}

func validateWeight(name string, weight, limit int) error {
	if weight < 1 {
		return invalid("weight %d for %s; allowed: 1 to the limit (%d)", weight, name, limit)
	}
	if weight > limit {
		return fmt.Errorf("%w: weight %d for %s; allowed: 1 to the limit (%d)", ErrTooHeavy, weight, name, limit)
	}
	return nil
}

func validateTTL(what string, d time.Duration) error {
	return invalidTiming(leasetiming.CheckTTL(d, leasetiming.Names{TTL: what}))
}

// invalidTiming is a lease timing's refusal as an ErrInvalid (nil for nil).
func invalidTiming(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrInvalid, err)
}
