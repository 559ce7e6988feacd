package view

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/humantime"
)

// WaitEstimate is an expected wait, with what it rests on.
type WaitEstimate struct {
	// Known is false when nothing can be said: the resource is paused,
	// has no limit yet, or no hold history while the waiter must wait.
	Known bool
	// Wait is the expected wait from now (Known only); 0 when the waiter
	// fits at once.
	Wait time.Duration
	// Holds is the number of recent holds it rests on (Status.Holds),
	// and MeanHold their mean.
	Holds    int
	MeanHold time.Duration
	// Paused: the wait lasts until the resource is resumed.
	Paused bool
	// Fits: the waiter fits at once (Wait 0, whatever the history).
	Fits bool
}

// ExpectedWait estimates how long waiter place (1-based, as in
// st.Waiters) still waits; place 0 means a newcomer of weight 1 at the
// tail, the resource's own expected wait. It is the one estimate slots,
// the status line of a waiting `governor run` and the status page show.
//
// It rests on the hold durations the backend measured (Status.Holds, the
// last backendkit.HoldHistory grants to release, expiry, reclaim or takeover, of
// any process), on how long each current holder has held, and on the
// weight queued ahead: each held slot is expected to free once its holder
// has held the mean hold (at once if it already has), each free slot once
// a waiter ahead has taken it and held it the mean, and every slot again
// each mean hold after; the waiter is granted once the weight held and
// queued ahead of it, plus its own, has fallen under the limit. As time
// passes (st.Now later) the estimate counts down. A waiter that fits at
// once waits 0. It is a pure function of st.
func ExpectedWait(st governor.Status, place int) WaitEstimate {
	var e WaitEstimate
	for _, d := range st.Holds {
		e.MeanHold += d
	}
	if e.Holds = len(st.Holds); e.Holds > 0 {
		e.MeanHold /= time.Duration(e.Holds)
	}
	if st.Paused != nil {
		e.Paused = true
		return e
	}
	if st.Limit <= 0 {
		return e
	}
	weight, ahead := 1, st.Waiters
	if place > 0 && place <= len(st.Waiters) {
		weight, ahead = st.Waiters[place-1].Weight, st.Waiters[:place-1]
	}
	need := st.Used + weight - st.Limit
	for _, w := range ahead {
		need += w.Weight
	}
	if need <= 0 {
		e.Known, e.Fits = true, true
		return e
	}
	if e.Holds == 0 {
		return e
	}
	e.Known = true
	e.Wait = untilFreed(st, need, e.MeanHold)
	return e
}

// untilFreed is how long until need slots of st have freed, when every
// slot frees each mean hold: a held one first when its holder has held
// mean, a free one (or one held by a holder st does not list) after a
// full mean.
func untilFreed(st governor.Status, need int, mean time.Duration) time.Duration {
	type slots struct {
		first time.Duration // when they first free
		n     int
	}
	var all []slots
	listed := 0
	for _, h := range st.Holders {
		first := mean
		if !h.AcquiredAt.IsZero() && !st.Now.IsZero() {
			first = max(mean-st.Now.Sub(h.AcquiredAt), 0)
		}
		all = append(all, slots{first, h.Weight})
		listed += h.Weight
	}
	if rest := max(st.Limit, st.Used) - listed; rest > 0 {
		all = append(all, slots{mean, rest})
	}
	slices.SortStableFunc(all, func(a, b slots) int { return cmp.Compare(a.first, b.first) })
	total := 0
	for _, s := range all {
		total += s.n
	}
	if total <= 0 {
		return 0
	}
	rounds, i := (need-1)/total, (need-1)%total
	for _, s := range all {
		if i < s.n {
			return time.Duration(rounds)*mean + s.first
		}
		i -= s.n
	}
	return time.Duration(rounds+1) * mean // cannot happen: i < total
}

// String says the estimate and what it rests on: "~40s (from the last 50
// holds)", "now", "any moment (holders past the mean hold of 30s, from
// the last 50 holds)", "unknown (no hold history yet)", "unknown (paused)".
func (e WaitEstimate) String() string {
	switch {
	case e.Paused:
		return "unknown (paused)"
	case !e.Known && e.Holds == 0:
		return "unknown (no hold history yet)"
	case !e.Known:
		return "unknown"
	case e.Fits:
		return "now"
	}
	holds := "holds"
	if e.Holds == 1 {
		holds = "hold"
	}
	if e.Wait == 0 && e.MeanHold > 0 {
		return fmt.Sprintf("any moment (holders past the mean hold of %s, from the last %d %s)", humantime.Ago(e.MeanHold), e.Holds, holds)
	}
	return fmt.Sprintf("~%s (from the last %d %s)", humantime.Ago(e.Wait), e.Holds, holds)
}
