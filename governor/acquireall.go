package governor

import (
	"context"
	"sort"
	"strings"
)

// Want is one resource of an AcquireAll.
type Want struct {
	Resource string
	AcquireOptions
}

// AcquireAll takes several resources in the fixed global order (Options
// LockOrder, then name), so that two callers never deadlock. On failure
// it releases what it took, in reverse, and returns the error. The leases
// come back in acquisition order.
func (g *Governor) AcquireAll(ctx context.Context, wants []Want) ([]*Lease, error) {
	if err := g.enter(); err != nil {
		return nil, err
	}
	defer g.active.Done()
	reqs := make([]Request, len(wants))
	tms := make([]LeaseTiming, len(wants))
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
	sort.SliceStable(idx, func(a, b int) bool { return g.Less(wants[idx[a]].Resource, wants[idx[b]].Resource) })
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

// Less orders resources for AcquireAll: by the first LockOrder prefix
// they match, then by name.
func (g *Governor) Less(a, b string) bool {
	ra, rb := g.rank(a), g.rank(b)
	if ra != rb {
		return ra < rb
	}
	return a < b
}

func (g *Governor) rank(name string) int {
	for i, p := range g.order {
		if name == p || strings.HasPrefix(name, p+":") {
			return i
		}
	}
	return len(g.order)
}
