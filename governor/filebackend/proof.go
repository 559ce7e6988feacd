package filebackend

import (
	"context"
	"errors"

	"github.com/governor-dev/governor/governor"
)

var _ governor.LeaseProver = (*Backend)(nil)

// LeaseAlive implements governor.LeaseProver: lease id of key is proven
// alive while its lease file is locked — by this Backend, or by any
// process that inherited the file (the command tree of a `governor run`
// whose governor and watchdog were killed). That proof wins over a
// declared pid found dead. An error tells nothing either way.
func (b *Backend) LeaseAlive(ctx context.Context, key governor.Key, id string) (bool, error) {
	if b.isClosed() {
		return false, governor.ErrClosed
	}
	if b.holds(key, id) {
		return true, nil
	}
	t, err := b.begin(ctx, key, false)
	if errors.Is(err, errNoState) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer t.end()
	h := t.st.holder(id)
	return h != nil && h.Proof && !leaseDead(t.dir, leasePrefix+escape(id)), nil
}
