package runner

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/governor-dev/governor/governor/proc"
)

// A stopPlan is when the command tree must be stopped if no renewal
// comes: TERM at term, KILL at kill, the earliest local deadline of the
// run's leases (send time of the last successful renewal + TTL − safety
// margin). The backend cannot grant the slot elsewhere before that
// deadline, so a tree stopped by it never overlaps the next holder's work.
type stopPlan struct {
	term, kill time.Time
	resource   string // of the lease whose deadline kill is
	// local: the backend expires leases on this machine's clock, which
	// stops in a suspend as this process's does (the file backend): the
	// plan is kept on proc.MachineClock. Otherwise (Redis, on its own
	// clock, which a suspend of this machine does not stop) it is kept on
	// proc.SleepClock, so that a suspend past the deadline kills the tree.
	local bool
}

// planStop is the stop plan of the leases' earliest deadline, taken just
// after a renewal: the grace between TERM and KILL is the kill grace,
// bounded to a quarter of the time left, so that TERM comes well after
// the next renewal is due (a lease renews after at most half the time
// left) and a slow renewal still has a quarter of it to succeed. ok is
// false when the run holds no lease of its own.
func planStop(deadlines map[string]time.Time, killGrace time.Duration) (stopPlan, bool) {
	var p stopPlan
	for res, x := range deadlines {
		if p.kill.IsZero() || x.Before(p.kill) {
			p.kill, p.resource = x, res
		}
	}
	if p.kill.IsZero() {
		return stopPlan{}, false
	}
	p.term = p.kill.Add(-min(killGrace, max(time.Until(p.kill), 0)/4))
	return p, true
}

// cause is why the tree is stopped when the plan's TERM instant comes
// with no renewal.
func (p stopPlan) cause() *stopCause {
	left := time.Until(p.kill)
	if left <= 0 {
		return &stopCause{ExitLeaseLost, OutcomeLeaseLost,
			fmt.Sprintf("the lease on %s was lost (no renewal came by its deadline); stopping the command tree: another holder may be granted the slot", p.resource)}
	}
	return &stopCause{ExitLeaseLost, OutcomeLeaseLost,
		fmt.Sprintf("no renewal of the lease on %s came in time: it is lost in %v; stopping the command tree (TERM, then KILL by then) so that it is gone before another holder can be granted the slot",
			p.resource, left.Round(time.Millisecond))}
}

// overduePlans remembers the first stop plan whose TERM instant had passed
// when governor next ran (a renewal read late: governor was stopped or
// starved). The watchdog had only that plan meanwhile and may have killed
// the tree by it, although a later renewal moved the plan on.
type overduePlans struct {
	first stopPlan
	seen  bool
}

// note records p, the plan in force until now, if it was overdue.
func (o *overduePlans) note(p stopPlan, planned bool, now time.Time) {
	if planned && !o.seen && now.After(p.term) {
		o.first, o.seen = p, true
	}
}

// killedBy says whether a command killed by a signal at now was killed by
// the watchdog: the plan in force (cur) or an earlier one was overdue. It
// returns the plan the watchdog acted on.
func (o *overduePlans) killedBy(cur stopPlan, planned bool, now time.Time) (stopPlan, bool) {
	switch {
	case o.seen:
		return o.first, true
	case planned && now.After(cur.term):
		return cur, true
	}
	return stopPlan{}, false
}

// The watchdog protocol, one line at a time on the pipe: "deadline TERM
// KILL CLOCK" after each renewal — readings, in nanoseconds, of a clock
// both processes share (never wall time): CLOCK "sleep" is
// proc.SleepClock, "machine" proc.MachineClock (stopPlan.local) — and
// "done" once nothing is left to guard.
const (
	msgDeadline  = "deadline"
	msgDone      = "done"
	clockSleep   = "sleep"
	clockMachine = "machine"
)

func (p stopPlan) message() string {
	// One reading of each clock, taken together: the two instants keep
	// their distance exactly.
	clock, name := proc.SleepClock, clockSleep
	if p.local {
		clock, name = proc.MachineClock, clockMachine
	}
	mono, now := clock(), time.Now()
	return fmt.Sprintf("%s %d %d %s\n", msgDeadline, mono+p.term.Sub(now), mono+p.kill.Sub(now), name)
}

// machinePlan is a stop plan as the watchdog receives it: readings of
// proc.SleepClock, or of proc.MachineClock when machine is set.
type machinePlan struct {
	term, kill time.Duration
	machine    bool
}

// parseLine reads one line of the protocol: done, or a deadline.
func parseLine(line string) (done bool, p machinePlan, err error) {
	f := strings.Fields(line)
	switch {
	case len(f) == 1 && f[0] == msgDone:
		return true, p, nil
	case len(f) == 4 && f[0] == msgDeadline && (f[3] == clockSleep || f[3] == clockMachine):
		t, err1 := strconv.ParseInt(f[1], 10, 64)
		k, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 == nil && err2 == nil && t <= k {
			return false, machinePlan{time.Duration(t), time.Duration(k), f[3] == clockMachine}, nil
		}
	}
	return false, p, fmt.Errorf("unexpected line %q on the watchdog pipe; expected %q or %q", line, msgDone,
		msgDeadline+" TERM KILL "+clockSleep+"|"+clockMachine)
}

// planStop makes the stop plan of the run's leases as they are now and
// tells the watchdog. ok is false when the run holds no lease of its own.
func (r *run) planStop() (stopPlan, bool) {
	ds := make(map[string]time.Time, len(r.leases))
	for _, l := range r.leases {
		ds[l.Resource()] = l.Deadline()
	}
	p, ok := planStop(ds, r.killGrace())
	if ok && r.wd != nil {
		_, p.local = r.g.Backend().(leaseFiler)
		r.wd.send(p)
	}
	return p, ok
}
