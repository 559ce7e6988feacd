// Package gcra is the generic cell rate algorithm that governor's rate
// limits use, in Go for the file backend; scripts-lua/rate.lua is the same
// algorithm for Redis. Times are integers of one unit (the file backend
// uses nanoseconds, Redis microseconds).
package gcra

// Limit is Rate cells per Period, with at most Burst at once (Burst 0
// means Rate). A zero Rate is no limit.
type Limit struct {
	Rate   int64
	Period int64
	Burst  int64
}

// Decision of one dimension.
type Decision struct {
	Allowed    bool
	RetryAfter int64 // when not allowed; -1 if cost can never fit (cost > burst)
	Remaining  int64 // cells still available now after this charge; -1 for no limit
	TAT        int64 // the new theoretical arrival time to store when allowed
}

func (l Limit) burst() int64 {
	if l.Burst > 0 {
		return l.Burst
	}
	return l.Rate
}

// Reserve decides whether cost cells fit at now, given the stored
// theoretical arrival time tat (0 when none).
func Reserve(l Limit, tat, now, cost int64) Decision {
	if l.Rate <= 0 {
		return Decision{Allowed: true, Remaining: -1, TAT: tat}
	}
	emission := float64(l.Period) / float64(l.Rate)
	tolerance := emission * float64(l.burst())
	if cost > l.burst() {
		return Decision{RetryAfter: -1}
	}
	if tat < now {
		tat = now
	}
	next := float64(tat) + emission*float64(cost)
	allowAt := next - tolerance
	// With a millionth of a cell of slack too: at tat <= now the whole
	// burst is allowAt = now exactly, which a float sum of a large now
	// and a period/rate that is no integer may round a hair above (49
	// per hour was never granted whole).
	if allowAt-float64(now) > emission*1e-6 {
		return Decision{RetryAfter: int64(allowAt - float64(now) + 0.999999)}
	}
	// The cells left, from times relative to now (exact integers) and
	// with a millionth of a cell of slack: neither a float quotient nor
	// times rounded to the backend's unit (ns here, µs in rate.lua) may
	// make 6 cells 5.
	left := (tolerance - float64(tat-now) - emission*float64(cost)) / emission
	return Decision{Allowed: true, Remaining: int64(left + 1e-6), TAT: int64(next)}
}

// Adjust charges delta more cells (negative: refunds) after the fact and
// returns the new tat; a refund never brings it before now.
func Adjust(l Limit, tat, now, delta int64) int64 {
	if l.Rate <= 0 {
		return tat
	}
	emission := float64(l.Period) / float64(l.Rate)
	if tat < now {
		tat = now
	}
	next := int64(float64(tat) + emission*float64(delta))
	if next < now {
		next = now
	}
	return next
}
