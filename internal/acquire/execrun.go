package acquire

import (
	"context"
	"errors"
	"fmt"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/lockorder"
)

// isExecRun reports whether resource is one of the exec-run resources:
// the run lock or the join slots (see DefaultResource).
func isExecRun(resource string) bool {
	return resource == DefaultResource || resource == JoinResource
}

// execRunInside returns the lease of the run lock or join slot of
// project that an ancestor run holds (named in GOVERNOR_HELD and proven:
// ProvenHeld), its weight and the limit in force, ok false when there is
// none.
func execRunInside(ctx context.Context, g *governor.Governor, byKey map[governor.Key]HeldLease) (h HeldLease, weight, limit int, ok bool, err error) {
	for _, name := range []string{DefaultResource, JoinResource} {
		h, ok = byKey[governor.Key{Project: g.Project(), Resource: name}]
		if !ok {
			continue
		}
		switch err := ProvenHeld(ctx, g, h); {
		case err == nil:
			st, err := g.Status(ctx, name)
			if err != nil {
				return h, 0, 0, false, fmt.Errorf("reading %s, which an ancestor holds: %w", name, err)
			}
			for _, o := range st.Holders {
				if o.LeaseID == h.LeaseID {
					return h, o.Weight, st.Limit, true, nil
				}
			}
			return h, 0, 0, false, fmt.Errorf("lease %s of %s is no longer held: %w", h.LeaseID, name, governor.ErrNotHeld)
		case !errors.Is(err, governor.ErrNotOwner) && !errors.Is(err, governor.ErrNotHeld):
			return HeldLease{}, 0, 0, false, err
		}
	}
	return HeldLease{}, 0, 0, false, nil
}

// OrderError is checkOrder's refusal: a nested acquire that wants a
// resource before one its ancestors hold. It is bad input (the caller
// must take its resources in order), not the backend's: retrying it
// fails the same way.
type OrderError struct{ msg string }

func (e *OrderError) Error() string { return e.msg }

// checkOrder refuses at once a nested acquire that wants a resource
// earlier in the lock order than one its ancestors hold (GOVERNOR_HELD,
// proven): it would wait holding the later one, against the order every
// other process keeps, and deadlock silently with a process that holds
// the earlier one and waits for the later. The exec-run resources are
// left out: they are the project's run lock, and a run inside an exec
// run is part of it (execRunInside).
func (p *Plan) checkOrder(ctx context.Context, g *governor.Governor, byKey map[governor.Key]HeldLease, wants []governor.Want) error {
	for _, w := range wants {
		for k, h := range byKey {
			if k.Project != g.Project() || isExecRun(k.Resource) || k.Resource == w.Resource || lockorder.Compare(p.order, w.Resource, k.Resource) >= 0 {
				continue
			}
			if ProvenHeld(ctx, g, h) != nil {
				continue // not proven held: nothing to deadlock with
			}
			return &OrderError{msg: fmt.Sprintf("%s comes before %s in the lock order (lock_order, then name), and an ancestor holds %s (%s): waiting for %s while it is held can deadlock with a process that holds %s and waits for %s; take %s in the outer run too (one --resource per resource, taken in order), or run this one outside it",
				w.Resource, k.Resource, k.Resource, EnvHeld, w.Resource, w.Resource, k.Resource, w.Resource)}
		}
	}
	return nil
}
