package governor

import "time"

// maxWaitLate is how often a waiter past its max_wait re-checks until the
// backend has dropped it: its enqueue (the backend's clock) came a little
// after the acquire began (this one's).
const maxWaitLate = 50 * time.Millisecond

// requestMaxWait is the max_wait of the queue policy req asks for (0:
// none): a waiter re-checks at it, so that it is dropped at its deadline
// rather than at the next re-check (nextRecheck).
func requestMaxWait(req Request) time.Duration {
	if req.Policy == "" {
		return 0
	}
	p, err := ParsePolicy(req.Policy)
	if err != nil {
		return 0
	}
	return p.MaxWait
}

// nextRecheck is when a queued acquire that has waited waited re-checks:
// after recheck, or sooner, at its max_wait (0: none), and every
// maxWaitLate once past it.
func nextRecheck(recheck, maxWait, waited time.Duration) time.Duration {
	if maxWait <= 0 {
		return recheck
	}
	if left := maxWait - waited; left > 0 {
		return min(recheck, left+time.Millisecond)
	}
	return min(recheck, maxWaitLate)
}
