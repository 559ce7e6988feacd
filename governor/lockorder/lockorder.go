// Package lockorder is the one lock order every acquire of several
// resources keeps, so that two callers never deadlock: by the first
// prefix of the configured order (governor.Options.LockOrder,
// lock_order) a resource matches (the name itself, or it followed by a
// colon), then by name. Governor.Hold takes its slots in it; a nested
// acquire (internal/acquire) refuses to wait for a resource before one
// its ancestors hold.
package lockorder

import "strings"

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
