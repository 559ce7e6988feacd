package runner

import (
	"context"
	"errors"

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
func (r *run) execRunInside(ctx context.Context, project string, byKey map[governor.Key]HeldLease) (bool, error) {
	for _, name := range []string{DefaultResource, JoinResource} {
		h, ok := byKey[governor.Key{Project: project, Resource: name}]
		if !ok {
			continue
		}
		switch err := ProvenHeld(ctx, r.g, h); {
		case err == nil:
			return true, nil
		case !errors.Is(err, governor.ErrNotOwner) && !errors.Is(err, governor.ErrNotHeld):
			return false, err
		}
	}
	return false, nil
}
