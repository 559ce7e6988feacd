// Package histogram names the distributions a backend keeps per
// resource (governor.Status.Histograms), so that every process counts,
// CLI runs included: the time to a grant and the time held, each with
// fixed bucket bounds. A leaf: it imports only the standard library.
package histogram

import (
	"slices"
	"time"
)

// The histograms, by name. Adding one is a name, its bounds in
// histogramBounds, and an observe call where it is measured
// (governor's recorder).
const (
	// Wait is the time from an acquire call to its grant, on
	// the acquiring process's monotonic clock: immediate grants too.
	Wait = "wait"
	// Hold is how long a lease was held until its release: by
	// governor.Lease.Release (from the acquire call, on the holder's monotonic
	// clock) or by its handle with the secret (governor.Governor.ReleaseHandle,
	// 'governor release': from the grant, on the backend's clock). Leases
	// that ended otherwise (expired, reclaimed, taken over) are not in it;
	// governor.Status.Holds, kept by the backend, counts them too.
	Hold = "hold"
)

// histogramBounds are the fixed upper bounds of each histogram. The
// backend stores counts by bucket index, so a bound must never change
// once released: add a histogram instead.
var histogramBounds = map[string][]time.Duration{
	Wait: {5 * time.Millisecond, 25 * time.Millisecond, 100 * time.Millisecond, 500 * time.Millisecond,
		time.Second, 2500 * time.Millisecond, 5 * time.Second, 10 * time.Second, 30 * time.Second, time.Minute,
		2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 30 * time.Minute, time.Hour},
	Hold: {10 * time.Millisecond, 100 * time.Millisecond, 500 * time.Millisecond, time.Second,
		5 * time.Second, 10 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute,
		10 * time.Minute, 30 * time.Minute, time.Hour, 2 * time.Hour, 6 * time.Hour, 24 * time.Hour},
}

// Bounds returns the upper bounds of the buckets of histogram
// name, ascending (a last bucket, +Inf, follows them); nil for a name
// that is not one of the histograms (Wait, Hold).
func Bounds(name string) []time.Duration {
	return slices.Clone(histogramBounds[name])
}

// Histogram is a distribution kept by the backend (governor.Status.Histograms).
type Histogram struct {
	// Counts are the observations per bucket of Bounds, then
	// +Inf: len(bounds)+1 entries, not cumulative.
	Counts []int64
	// Sum is the sum of the observations.
	Sum time.Duration
}

// Count is the number of observations.
func (h Histogram) Count() int64 {
	var n int64
	for _, c := range h.Counts {
		n += c
	}
	return n
}
