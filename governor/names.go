package governor

import (
	"fmt"
	"time"

	"github.com/governor-dev/governor/governor/leasetiming"
	"github.com/governor-dev/governor/governor/lockorder"
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

// validateLockOrder is lockorder.Validate as an ErrInvalid.
func validateLockOrder(order []string) error {
	if err := lockorder.Validate(order); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return nil
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
