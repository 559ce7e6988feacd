package governor

import (
	"context"
	"sort"

	"github.com/governor-dev/governor/governor/leasetiming"
	"github.com/governor-dev/governor/governor/lockorder"
)

// Want is one resource of an Ask (Governor.Hold).
type Want struct {
	Resource string
	AcquireOptions
}

// acquireAll takes several resources in the fixed global order (Options
// LockOrder, then name), so that two callers never deadlock: the slots
// of an Ask (Governor.Hold). On failure it releases what it took, in
// reverse, and returns the error. The leases come back in acquisition
// order.
func (g *Governor) acquireAll(ctx context.Context, wants []Want) ([]*Lease, error) {
	if err := g.enter(); err != nil {
		return nil, err
	}
	defer g.active.Done()
	reqs := make([]Request, len(wants))
	tms := make([]leasetiming.Timing, len(wants))
	seen := map[string]bool{}
	for i, w := range wants {
		if seen[w.Resource] {
			return nil, invalid("resource %s asked for twice", w.Resource)
		}
		seen[w.Resource] = true
		o, err := g.withStoredLimit(ctx, w.Resource, w.AcquireOptions)
		if err != nil {
			return nil, err
		}
		r, tm, err := g.request(w.Resource, o)
		if err != nil {
			return nil, err
		}
		reqs[i], tms[i] = r, tm
	}
	idx := make([]int, len(wants))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return g.compare(wants[idx[a]].Resource, wants[idx[b]].Resource) < 0 })
	var got []*Lease
	for _, i := range idx {
		l, err := g.acquire(ctx, reqs[i], tms[i], wants[i].OnQueued, wants[i].GiveUpOnBackendError)
		if err != nil {
			for j := len(got) - 1; j >= 0; j-- {
				_ = got[j].Release()
			}
			return nil, err
		}
		got = append(got, l)
	}
	return got, nil
}

// compare orders resources for Hold, the one lock order
// (lockorder.Compare with Options.LockOrder).
func (g *Governor) compare(a, b string) int { return lockorder.Compare(g.order, a, b) }
