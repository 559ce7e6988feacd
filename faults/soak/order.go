//go:build linux

package main

import (
	"time"

	"github.com/governor-dev/governor/governor"
)

// checkOrder checks that resource res's waiters are served in the
// order of its queue (strict FIFO: the soak sets no queue policy, and
// the head blocks even lighter waiters behind it): a waiter granted
// since the last read (one second ago) must not have had a waiter ahead
// of it that is still queued now, queued at the same instant (not
// dropped and queued again meanwhile). After a loss of Redis's data the
// waiters queue again in the order they come back: not checked within
// lossWindow of one.
func (s *soak) checkOrder(w *watch, res string, st governor.Status) {
	prev := w.queues[res]
	w.queues[res] = st.Waiters
	if len(prev) < 2 {
		return
	}
	if _, ok := s.afterLoss(mono() - lossWindow.Nanoseconds()); ok {
		return
	}
	if _, ok := s.afterLoss(mono()); ok {
		return
	}
	queued := map[string]time.Time{}
	for _, q := range st.Waiters {
		queued[q.ID] = q.EnqueuedAt
	}
	held := map[string]bool{}
	for _, h := range st.Holders {
		held[h.LeaseID] = true
	}
	s.check("waiters served in queue order (reads)", 1)
	for j, granted := range prev {
		if !held[granted.ID] {
			continue
		}
		for _, ahead := range prev[:j] {
			if at, ok := queued[ahead.ID]; ok && at.Equal(ahead.EnqueuedAt) {
				s.violate("order", "%s: waiter %s (queued %s) granted while %s, ahead of it (queued %s), still waits",
					res, granted.ID, granted.EnqueuedAt.Format("15:04:05.000"), ahead.ID, ahead.EnqueuedAt.Format("15:04:05.000"))
				break
			}
		}
	}
}
