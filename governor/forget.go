package governor

import (
	"context"
	"fmt"
	"time"
)

// DefaultRetention is how long a resource with no holder and no waiter
// is remembered (see Backend.Forget): a day keeps a dashboard's day of
// history and `governor events` of the last day whole, and a resource
// used once a day is never forgotten; while a project that names
// resources per issue or per file makes a scrape read only the last
// day's, not every one it ever used.
const DefaultRetention = 24 * time.Hour

// MinRetention bounds the retention from below: a forgotten resource's
// next fencing token comes from the clock, so the last token must lie
// behind it, and a resource must outlive the holders that may still
// report on it.
const MinRetention = time.Second

// ValidateRetention checks a resource retention.
func ValidateRetention(d time.Duration) error {
	if d < MinRetention {
		return invalid("resource retention %v; allowed: %v or more (default %v)", d, MinRetention, DefaultRetention)
	}
	return nil
}

// Forget removes what the backend keeps of resource if it has been idle
// (no holder, no waiter, no live capacity lease, no grant or enqueue)
// for at least retention
// (see Backend.Forget), and reports whether it did. The first call that
// finds it idle only marks it. Bad input is ErrInvalid with nothing
// changed.
func (g *Governor) Forget(ctx context.Context, resource string, retention time.Duration) (bool, error) {
	if err := ValidateResource(resource); err != nil {
		return false, err
	}
	if err := ValidateRetention(retention); err != nil {
		return false, err
	}
	return g.b.Forget(ctx, Key{g.project, resource}, retention)
}

// ForgetIdle calls Forget for every resource of the project (see
// Backend.Forget) and returns those it forgot. A resource that fails is
// skipped; the first failure is returned with what was forgotten.
func (g *Governor) ForgetIdle(ctx context.Context, retention time.Duration) ([]string, error) {
	if err := ValidateRetention(retention); err != nil {
		return nil, err
	}
	names, err := g.Resources(ctx)
	if err != nil {
		return nil, err
	}
	var gone []string
	var first error
	for _, n := range names {
		ok, err := g.b.Forget(ctx, Key{g.project, n}, retention)
		if err != nil {
			if first == nil {
				first = fmt.Errorf("governor: forget %s: %w", n, err)
			}
			if ctx.Err() != nil {
				break
			}
			continue
		}
		if ok {
			gone = append(gone, n)
		}
	}
	return gone, first
}
