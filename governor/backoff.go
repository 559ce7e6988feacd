package governor

import (
	"math/rand/v2"
	"time"
)

// Bounds of the pause before a retry after a backend failure.
const (
	backoffBase = 50 * time.Millisecond
	backoffMax  = 2 * time.Second
)

// backoff spaces retries after backend failures with decorrelated
// jitter: each pause is drawn uniformly between backoffBase and three
// times the previous pause, capped at backoffMax. The pauses grow as a
// doubling schedule would, but holders that failed together (a Redis
// restart) do not retry together: without jitter every one of them would
// hit the recovering server in the same instants.
type backoff struct {
	d time.Duration // the last pause; 0 before the first
	// rnd returns a uniform value in [0, n); tests replace it.
	rnd func(n int64) int64
}

func newBackoff() *backoff { return &backoff{rnd: rand.Int64N} }

// reset starts the schedule over, after a success.
func (b *backoff) reset() { b.d = 0 }

// next returns the pause before the next retry, in [backoffBase,
// backoffMax].
func (b *backoff) next() time.Duration {
	hi := min(3*max(b.d, backoffBase), backoffMax)
	b.d = backoffBase + time.Duration(b.rnd(int64(hi-backoffBase)+1))
	return b.d
}
