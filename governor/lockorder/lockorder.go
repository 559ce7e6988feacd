// Package lockorder is the one lock order every acquire of several
// resources keeps, so that two callers never deadlock: by the first
// prefix of the configured order (governor.Options.LockOrder,
// lock_order) a resource matches (the name itself, or it followed by a
// colon), then by name. Governor.Hold takes its slots in it; a nested
// acquire (internal/acquire) refuses to wait for a resource before one
// its ancestors hold. Validate is the one check of an order.
package lockorder

import (
	"errors"
	"fmt"
	"strings"

	"github.com/governor-dev/governor/governor/naming"
)

// Compare orders resources a and b by order: negative when a comes
// first, positive when b does, 0 when they are the same.
func Compare(order []string, a, b string) int {
	if ra, rb := rank(order, a), rank(order, b); ra != rb {
		return ra - rb
	}
	return strings.Compare(a, b)
}

// rank is the index of the first prefix of order that name matches,
// len(order) when none does.
func rank(order []string, name string) int {
	for i, p := range order {
		if name == p || strings.HasPrefix(name, p+":") {
			return i
		}
	}
	return len(order)
}

// Error is one bad entry of an order (governor wraps it in
// governor.ErrInvalid).
type Error struct {
	Index int
	Entry string
	First int   // for an entry listed twice, the index of its first listing; else -1
	Err   error // for an entry that is not a valid resource name, its *naming.Error; else nil
}

func (e *Error) Error() string {
	switch {
	case e.Entry == "":
		return fmt.Sprintf("lock order entry %d is empty; entries are resource-name prefixes such as issue", e.Index)
	case e.First >= 0:
		return fmt.Sprintf("lock order entry %d %q is listed twice (also entry %d); each prefix must appear once", e.Index, e.Entry, e.First)
	}
	return fmt.Sprintf("lock order entry %d: %v", e.Index, e.Err)
}

// Validate checks an order (governor.Options.LockOrder, lock_order):
// every entry a valid resource name (a prefix of resource names), each
// listed once. It returns nil or every bad entry's *Error, joined.
func Validate(order []string) error {
	var errs []error
	first := map[string]int{}
	for i, p := range order {
		e := &Error{Index: i, Entry: p, First: -1}
		if j, dup := first[p]; dup {
			e.First = j
		} else {
			first[p] = i
			if p != "" {
				e.Err = naming.Check("resource", p, naming.MaxNameLen)
			}
		}
		if p == "" || e.First >= 0 || e.Err != nil {
			errs = append(errs, e)
		}
	}
	return errors.Join(errs...)
}
