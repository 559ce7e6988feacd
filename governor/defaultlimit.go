package governor

import "context"

// defaultLimit is the limit of a resource nobody gave one to: 1, a
// mutex, as in every lock tool (AcquireOptions.Limit 0).
const defaultLimit = 1

// StoredLimit is the limit an acquire that gives none (AcquireOptions
// .Limit 0) asks for resource: the limit stored with it, which is a live
// limit (SetLimit) or the one the processes before asked for (Status
// .Limit), else 1 (a mutex) when the resource has no state. So a limit
// given once, live or by a process, keeps ruling over callers that give
// none, and a resource nobody gave a limit to is a mutex. One status
// read; it changes nothing. An invalid resource name is ErrInvalid.
func (g *Governor) StoredLimit(ctx context.Context, resource string) (int, error) {
	st, err := g.Status(ctx, resource)
	if err != nil {
		return 0, err
	}
	if st.Limit > 0 {
		return st.Limit, nil
	}
	return defaultLimit, nil
}

// withStoredLimit is o with its Limit 0 made StoredLimit's.
func (g *Governor) withStoredLimit(ctx context.Context, resource string, o AcquireOptions) (AcquireOptions, error) {
	if o.Limit != 0 {
		return o, nil
	}
	n, err := g.StoredLimit(ctx, resource)
	o.Limit = n
	return o, err
}
