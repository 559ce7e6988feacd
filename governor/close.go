package governor

import "errors"

// Close ends every acquire in flight with ErrClosed (withdrawing its
// waiter, releasing a grant that raced with Close), stops every lease's
// heartbeat and releases them, then closes the backend. It returns the
// first release error. Calls after Close are ErrClosed.
func (g *Governor) Close() error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil
	}
	g.closed = true
	g.mu.Unlock()
	g.close()
	g.active.Wait()
	// No lease can be added now: newLease refuses once closed is set.
	g.mu.Lock()
	ls := make([]*Lease, 0, len(g.leases))
	for l := range g.leases {
		ls = append(ls, l)
	}
	g.mu.Unlock()
	var first error
	for _, l := range ls {
		if err := l.Release(); err != nil && first == nil && !errors.Is(err, ErrLeaseLost) {
			first = err
		}
	}
	g.losing.Wait() // lost leases being freed in the background
	if err := g.caps.close(); err != nil && first == nil {
		first = err // the share expires after its lease
	}
	g.rec.close()
	if err := g.b.Close(); err != nil && first == nil {
		first = err
	}
	return first
}
