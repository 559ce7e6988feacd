package acquire

import (
	"context"
	"errors"
	"fmt"

	"github.com/governor-dev/governor/governor"
)

// isExecRun reports whether resource is one of the exec-run resources:
// the run lock or the join slots (see DefaultResource).
func isExecRun(resource string) bool {
	return resource == DefaultResource || resource == JoinResource
}

// execRunInside reports whether an ancestor run holds the run lock or a
// join slot of project (named in GOVERNOR_HELD and proven: ProvenHeld).
// An exec run inside an exec run is part of it, so it takes none of the
// exec-run resources: a plain run inside a joiner would otherwise
// ask for the run lock while its ancestor holds a join slot — against the
// lock order, and a deadlock with a plain run that holds the lock and
// waits for that join slot.
func execRunInside(ctx context.Context, g *governor.Governor, byKey map[governor.Key]HeldLease) (bool, error) {
	for _, name := range []string{DefaultResource, JoinResource} {
		h, ok := byKey[governor.Key{Project: g.Project(), Resource: name}]
		if !ok {
			continue
		}
		switch err := ProvenHeld(ctx, g, h); {
		case err == nil:
			return true, nil
		case !errors.Is(err, governor.ErrNotOwner) && !errors.Is(err, governor.ErrNotHeld):
			return false, err
		}
	}
	return false, nil
}

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
			if k.Project != g.Project() || isExecRun(k.Resource) || k.Resource == w.Resource || !g.Less(w.Resource, k.Resource) {
				continue
			}
			if ProvenHeld(ctx, g, h) != nil {
				continue // not proven held: nothing to deadlock with
			}
			return fmt.Errorf("%s comes before %s in the lock order (lock_order, then name), and an ancestor holds %s (%s): waiting for %s while it is held can deadlock with a process that holds %s and waits for %s; take %s in the outer run too (one --resource per resource, taken in order), or run this one outside it",
				w.Resource, k.Resource, k.Resource, EnvHeld, w.Resource, w.Resource, k.Resource, w.Resource)
		}
	}
	return nil
}
