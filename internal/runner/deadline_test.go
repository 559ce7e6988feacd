package runner

import (
	"strings"
	"testing"
	"time"
)

func TestPlanStop(t *testing.T) {
	if _, ok := planStop(nil, time.Second); ok {
		t.Fatal("a plan without leases")
	}
	now := time.Now()
	p, ok := planStop(map[string]time.Time{"a": now.Add(24 * time.Second), "b": now.Add(12 * time.Second)}, 5*time.Second)
	if !ok || p.resource != "b" || !p.kill.Equal(now.Add(12*time.Second)) {
		t.Fatalf("plan %+v: want the earliest deadline, b's", p)
	}
	// The grace is a quarter of the time left when that is shorter than
	// the kill grace: TERM comes well after the next renewal is due.
	if g := p.kill.Sub(p.term); g > 3*time.Second || g < 2900*time.Millisecond {
		t.Fatalf("grace %v, want about 12s/4", g)
	}
	p, _ = planStop(map[string]time.Time{"a": now.Add(24 * time.Second)}, 5*time.Second)
	if g := p.kill.Sub(p.term); g != 5*time.Second {
		t.Fatalf("grace %v, want the kill grace", g)
	}
	p, _ = planStop(map[string]time.Time{"a": now.Add(-time.Second)}, 5*time.Second)
	if !p.term.Equal(p.kill) || !strings.Contains(p.cause().msg, "was lost") {
		t.Fatalf("a deadline passed: %+v, %q", p, p.cause().msg)
	}
}

func TestWatchdogLines(t *testing.T) {
	p, ok := planStop(map[string]time.Time{"a": time.Now().Add(8 * time.Second)}, time.Second)
	if !ok {
		t.Fatal("no plan")
	}
	done, mp, err := parseLine(strings.TrimSuffix(p.message(), "\n"))
	if err != nil || done || mp.term > mp.kill || mp.kill-mp.term != time.Second {
		t.Fatalf("parse of %q: %v %+v %v", p.message(), done, mp, err)
	}
	if done, _, err := parseLine(msgDone); !done || err != nil {
		t.Fatalf("done: %v %v", done, err)
	}
	for _, bad := range []string{"", "deadline 1", "deadline 2 1 sleep", "deadline x y sleep", "deadline 1 2", "deadline 1 2 wall", "done now"} {
		if _, _, err := parseLine(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// A renewal read after the plan's TERM instant had passed (governor
// stopped or starved) moves the plan on, but the watchdog acted on the
// old one meanwhile: a command killed by a signal then is the watchdog's
// doing (exit 122), not the command's own end (a starved run once exited
// 137 this way). A renewal in time leaves a signal the command's own.
func TestOverduePlanKilledBy(t *testing.T) {
	now := time.Now()
	old := stopPlan{term: now.Add(-time.Second), kill: now, resource: "a"}
	cur := stopPlan{term: now.Add(time.Minute), kill: now.Add(2 * time.Minute), resource: "b"}
	var o overduePlans
	if _, ok := o.killedBy(cur, true, now); ok {
		t.Fatal("nothing overdue: a signal is the command's own")
	}
	if p, ok := o.killedBy(old, true, now); !ok || p.resource != "a" {
		t.Fatalf("the plan in force is overdue: %+v, %v", p, ok)
	}
	o.note(cur, true, now) // renewed in time
	if _, ok := o.killedBy(cur, true, now); ok {
		t.Fatal("a renewal in time marked the plan overdue")
	}
	o.note(old, true, now) // renewed late: the old plan had passed
	o.note(stopPlan{term: now.Add(-time.Millisecond), resource: "c"}, true, now)
	if p, ok := o.killedBy(cur, true, now); !ok || p.resource != "a" {
		t.Fatalf("after a late renewal: %+v, %v; want the first overdue plan, a's", p, ok)
	}
	var none overduePlans
	none.note(old, false, now)
	if _, ok := none.killedBy(old, false, now); ok {
		t.Fatal("a run without a plan of its own: nothing for the watchdog to act on")
	}
}
