package governor

import (
	"fmt"
	"time"
)

// Estimate is an expected wait, with what it rests on.
type Estimate struct {
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
// last HoldHistory grants to release, expiry, reclaim or takeover, of
// any process) and the weight queued ahead: the resource frees on
// average Limit slots per mean hold, and the waiter is granted once the
// weight held and queued ahead of it, plus its own, has fallen under the
// limit. Holders' ages and weights are not told apart; a waiter that
// fits at once waits 0.
func ExpectedWait(st Status, place int) Estimate {
	var e Estimate
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
	e.Wait = time.Duration(int64(need) * int64(e.MeanHold) / int64(st.Limit))
	return e
}

// String says the estimate and what it rests on: "~40s (from the last 50
// holds)", "now", "unknown (no hold history yet)", "unknown (paused)".
func (e Estimate) String() string {
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
	return fmt.Sprintf("~%s (from the last %d %s)", Ago(e.Wait), e.Holds, holds)
}
