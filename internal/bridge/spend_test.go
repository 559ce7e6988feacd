package bridge_test

import (
	"context"
	"errors"
	"io"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/acquire"
	"github.com/governor-dev/governor/internal/bridge"
)

// day is a spend budget as a client gives it inline.
func day(limit float64) map[string]any {
	return map[string]any{"name": "evals-day", "limit": limit, "unit": "USD", "per": "24h"}
}

// spent reads what budget evals-day holds through a refusal: an
// estimate that never fits names its spent and reserved.
func spent(c *client) (spent, reserved float64) {
	c.t.Helper()
	e := c.fail("acquire", map[string]any{"resources": []string{"probe"}, "limit": 1,
		"budgets": []any{day(1)}, "estimate": 1000})
	b := e["budget"].(map[string]any)
	return b["spent"].(float64), b["reserved"].(float64)
}

// pair is two clients of st, each said hello.
func pair(t *testing.T, st store) (*client, *client) {
	a, b := start(t, st), start(t, st)
	a.hello()
	b.hello()
	return a, b
}

func TestBudgetsReserveWithTheSlotAndSettleOnce(t *testing.T) {
	backends(t, func(t *testing.T, st store) {
		a, b := pair(t, st)
		got := a.call("acquire", map[string]any{"resources": []string{"s1"}, "limit": 1, "budgets": []any{day(1)}, "estimate": 0.3})
		bs := got["budgets"].([]any)
		if len(bs) != 1 || bs[0].(map[string]any)["reserved"] != 0.3 || bs[0].(map[string]any)["unit"] != "USD" {
			t.Fatalf("acquire's budgets: %v", got)
		}
		// A call that does not fit is refused, naming the budget; the
		// slot it took first is left free.
		e := b.fail("acquire", map[string]any{"resources": []string{"s2"}, "limit": 1, "budgets": []any{day(1)}, "estimate": 0.8})
		bud, _ := e["budget"].(map[string]any)
		if e["code"] != float64(73) || e["kind"] != "busy" || bud["name"] != "evals-day" || bud["reserved"] != 0.3 ||
			bud["spent"] != float64(0) || bud["limit"] != float64(1) || bud["reason"] != "exhausted" || bud["reset"] == "" ||
			bud["estimate"] != 0.8 || !strings.Contains(e["message"].(string), "limit 1 USD") {
			t.Fatalf("refusal: %v", e)
		}
		e = b.fail("acquire", map[string]any{"resources": []string{"s2"}, "limit": 1, "budgets": []any{day(1)}, "estimate": 0.8, "if_busy": "skip"})
		if e["code"] != float64(75) || e["kind"] != "skipped" || e["budget"] == nil || !strings.Contains(e["message"].(string), "skipped") {
			t.Fatalf("skip: %v", e)
		}
		b.call("release", map[string]any{"lease": b.call("acquire", map[string]any{"resources": []string{"s2"}, "limit": 1})["lease"]})
		// Settle is idempotent per lease.
		if r := a.call("settle", map[string]any{"lease": "L1", "cost": 0.1}); r["settled"] != true || len(r["overruns"].([]any)) != 0 {
			t.Fatalf("settle: %v", r)
		}
		if r := a.call("settle", map[string]any{"lease": "L1", "cost": 0.5}); r["settled"] != false {
			t.Fatalf("second settle: %v", r)
		}
		a.call("release", map[string]any{"lease": "L1"})
		if s, r := spent(b); s != 0.1 || r != 0 {
			t.Fatalf("after settle: spent %v reserved %v; want 0.1, 0", s, r)
		}
		// Released unsettled: counted at its estimate.
		l := b.call("acquire", map[string]any{"resources": []string{"s2"}, "limit": 1, "budgets": []any{day(1)}, "estimate": 0.8})
		b.call("release", map[string]any{"lease": l["lease"]})
		if s, r := spent(b); s != 0.9 || r != 0 {
			t.Fatalf("released unsettled: spent %v reserved %v; want 0.9, 0", s, r)
		}
	})
}

func TestBudgetOverrunIsCountedInFull(t *testing.T) {
	backends(t, func(t *testing.T, st store) {
		a := start(t, st)
		a.hello()
		l := a.call("acquire", map[string]any{"resources": []string{"o"}, "limit": 1, "budgets": []any{day(1)}, "estimate": 0.2})
		r := a.call("settle", map[string]any{"lease": l["lease"], "costs": map[string]any{"evals-day": 0.5}})
		if ov := r["overruns"].([]any); r["settled"] != true || len(ov) != 1 || ov[0] != "evals-day" {
			t.Fatalf("overrun: %v", r)
		}
		if s, _ := spent(a); s != 0.5 {
			t.Fatalf("spent %v; want the actual 0.5 in full", s)
		}
	})
}

func TestBudgetWaitsForSettlementAndTimesOut(t *testing.T) {
	backends(t, func(t *testing.T, st store) {
		a, b := pair(t, st)
		a.call("acquire", map[string]any{"resources": []string{"w1"}, "limit": 1, "budgets": []any{day(1)}, "estimate": 0.9})
		e := b.fail("acquire", map[string]any{"resources": []string{"w2"}, "limit": 1, "budgets": []any{day(1)}, "estimate": 0.5, "wait_timeout": 0.2})
		if e["code"] != float64(73) || e["budget"] == nil || !strings.Contains(e["message"].(string), "wait-timeout") {
			t.Fatalf("wait timeout: %v", e)
		}
		id := b.send("acquire", map[string]any{"resources": []string{"w2"}, "limit": 1, "budgets": []any{day(1)}, "estimate": 0.5, "if_busy": "wait"})
		a.call("settle", map[string]any{"lease": "L1", "cost": 0.2})
		if r := b.reply(id); r["ok"] != true {
			t.Fatalf("waiting reservation: %v", r)
		}
	})
}

func TestDeadCallerLeavesItsEstimateCounted(t *testing.T) {
	backends(t, func(t *testing.T, st store) {
		a, b := pair(t, st)
		a.call("acquire", map[string]any{"resources": []string{"d"}, "limit": 1, "budgets": []any{day(1)}, "estimate": 0.4})
		a.close()
		if s, r := spent(b); s != 0.4 || r != 0 {
			t.Fatalf("after the caller's end: spent %v reserved %v; want 0.4, 0", s, r)
		}
	})
}

func TestProviderGateReservesAndReportSettles(t *testing.T) {
	backends(t, func(t *testing.T, st store) {
		inR, inW := io.Pipe()
		a := startWith(t, st, catalogOf(t, "providers:\n  anthropic: {max_concurrency: 2}\n"), inR, inW)
		a.hello()
		l := a.call("provider_acquire", map[string]any{"provider": "anthropic", "budgets": []any{day(1)}, "estimate": 0.6})
		if l["provider"] != "anthropic" || len(l["budgets"].([]any)) != 1 {
			t.Fatalf("provider_acquire: %v", l)
		}
		r := a.call("provider_report", map[string]any{"lease": l["lease"], "outcome": "ok", "cost": 0.25})
		if r["settled"] != true {
			t.Fatalf("provider_report: %v", r)
		}
		a.call("provider_release", map[string]any{"lease": l["lease"]})
		if s, _ := spent(a); s != 0.25 {
			t.Fatalf("spent %v; want 0.25", s)
		}
	})
}

func TestBudgetBadInputIsRefusedByName(t *testing.T) {
	a := start(t, fileStore(t))
	a.hello()
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"budgets": []any{day(1)}}, "estimate"},
		{map[string]any{"budgets": []any{day(1)}, "max_tokens": 100}, "exactly one provider"},
		{map[string]any{"budgets": []any{day(1)}, "estimate": -1}, "estimate -1"},
		{map[string]any{"budgets": []any{map[string]any{"name": "x", "limit": 1, "per": "1x"}}, "estimate": 0.1}, `per "1x"`},
		{map[string]any{"budgets": []any{map[string]any{"name": "x", "limit": 1}}, "estimate": 0.1}, "per 0s"},
		{map[string]any{"budgets": []any{map[string]any{"name": "x", "limit": 1, "calendar": "day", "tz": "Mars/Olympus"}}, "estimate": 0.1}, "Mars/Olympus"},
		{map[string]any{"budgets": []any{map[string]any{"name": "x", "limit": 1, "calendar": "day", "tz": "Local"}}, "estimate": 0.1}, "local zone"},
		{map[string]any{"budgets": []any{map[string]any{"name": "x", "limit": 1, "per": 60, "cap": 2}}, "estimate": 0.1}, "cap"},
		{map[string]any{"budgets": []any{day(1), day(2)}, "estimate": 0.1}, "twice"},
		{map[string]any{"budgets": []any{"evals-day"}, "estimate": 0.1}, `budget "evals-day" is not configured; configured: none`},
		{map[string]any{"budgets": []any{5}, "estimate": 0.1}, "budgets entry 5; allowed: the name of a configured budget"},
	} {
		args := map[string]any{"resources": []string{"bad"}, "limit": 1}
		for k, v := range tc.args {
			args[k] = v
		}
		e := a.fail("acquire", args)
		if e["kind"] != "failure" || !strings.Contains(e["message"].(string), tc.want) {
			t.Errorf("%v: %v; want a failure naming %q", tc.args, e, tc.want)
		}
	}
	// Nothing was left held. An estimate no budget applies to reserves
	// nothing, and says so (as 'governor run --cost' does).
	l := a.call("acquire", map[string]any{"resources": []string{"bad"}, "limit": 1, "estimate": 0.1})
	if notes, _ := l["notes"].([]any); len(notes) != 1 || !strings.Contains(notes[0].(string), "no spend budget applies") {
		t.Fatalf("an estimate no budget applies to: %v", l)
	}
	if e := a.fail("settle", map[string]any{"lease": l["lease"], "cost": 1}); !strings.Contains(e["message"].(string), "no spend budget") {
		t.Fatalf("settle without budgets: %v", e)
	}
	l = a.call("acquire", map[string]any{"resources": []string{"bad2"}, "limit": 1, "budgets": []any{day(1)}, "estimate": 0.1})
	if e := a.fail("settle", map[string]any{"lease": l["lease"], "costs": map[string]any{"other": 1}}); !strings.Contains(e["message"].(string), "evals-day") {
		t.Fatalf("settle naming another budget: %v", e)
	}
}

func TestBudgetWaitIsCancelledLeavingNothingHeld(t *testing.T) {
	backends(t, func(t *testing.T, st store) {
		a, b := pair(t, st)
		a.call("acquire", map[string]any{"resources": []string{"c1"}, "limit": 1, "budgets": []any{day(1)}, "estimate": 1})
		id := b.send("acquire", map[string]any{"resources": []string{"c2"}, "limit": 1, "budgets": []any{day(1)}, "estimate": 0.5, "if_busy": "wait"})
		// The wait holds its slot while it waits for the budget: c2 is busy.
		for end := time.Now().Add(deadline); ; {
			s := a.call("slots", map[string]any{"resources": []string{"c2"}})
			if len(s["resources"].([]any)[0].(map[string]any)["holders"].([]any)) == 1 {
				break
			}
			if time.Now().After(end) {
				t.Fatal("the budget wait never held its slot")
			}
		}
		b.call("cancel_request", map[string]any{"request": id})
		if r := b.reply(id); r["ok"] != false || r["error"].(map[string]any)["kind"] != "cancelled" {
			t.Fatalf("cancelled budget wait: %v", r)
		}
		a.call("acquire", map[string]any{"resources": []string{"c2"}, "limit": 1}) // the slot was released
		if s, r := spent(a); s != 0 || r != 1 {
			t.Fatalf("after the cancelled wait: spent %v reserved %v; want 0, 1 (nothing of it reserved)", s, r)
		}
	})
}

// TestProviderReportReleases: provider_report with release is the
// report, then the release with the settle: at the cost given, else at
// the estimate, once per lease; bad input releases nothing; a lost
// lease still settles, and the reply says it was lost.
func TestProviderReportReleases(t *testing.T) {
	backends(t, func(t *testing.T, st store) {
		inR, inW := io.Pipe()
		a := startWith(t, st, catalogOf(t, "providers:\n  anthropic: {max_concurrency: 1}\n"), inR, inW)
		a.hello()
		b := start(t, st)
		b.call("hello", map[string]any{"protocol": 1, "pid": os.Getpid(), "session": "taker"})
		gate := func() string {
			l := a.call("provider_acquire", map[string]any{"provider": "anthropic", "if_busy": "fail", "budgets": []any{day(10)}, "estimate": 0.6})
			return l["lease"].(string)
		}
		l := gate()
		if e := a.fail("provider_report", map[string]any{"lease": l, "release": true, "cost": -1}); e["kind"] != "failure" || !strings.Contains(e["message"].(string), "cost -1") {
			t.Fatalf("a negative cost: %v", e)
		}
		if e := a.fail("provider_report", map[string]any{"release": true}); !strings.Contains(e["message"].(string), "give the lease") {
			t.Fatalf("release without a lease: %v", e)
		}
		// The refused reports released nothing: the lease is still held.
		r := a.call("provider_report", map[string]any{"lease": l, "outcome": "ok", "cost": 0.25, "release": true})
		if r["settled"] != true || len(r["overruns"].([]any)) != 0 {
			t.Fatalf("provider_report with release: %v", r)
		}
		if e := a.fail("release", map[string]any{"lease": l}); !strings.Contains(e["message"].(string), "unknown lease") {
			t.Fatalf("release after the report's: %v; want an unknown lease", e)
		}
		// Settled before: the report's settle changes nothing.
		l = gate() // the slot (max 1) was freed
		a.call("settle", map[string]any{"lease": l, "cost": 0.1})
		if r := a.call("provider_report", map[string]any{"lease": l, "cost": 0.5, "release": true}); r["settled"] != false {
			t.Fatalf("report after a settle: %v; want settled false", r)
		}
		// No cost: at the estimate.
		a.call("provider_report", map[string]any{"lease": gate(), "release": true})
		if s, r := spent(a); math.Abs(s-0.95) > 1e-9 || r != 0 {
			t.Fatalf("spent %v reserved %v; want 0.25+0.1+0.6, 0", s, r)
		}
		// Lost (taken over): the cost is settled all the same, the reply is lost.
		held := a.call("provider_acquire", map[string]any{"provider": "anthropic", "if_busy": "fail", "budgets": []any{day(10)}, "estimate": 0.6})
		l = held["lease"].(string)
		took := b.call("takeover", map[string]any{"resource": "provider:anthropic", "force": true, "limit": 1,
			"lease_id": held["resources"].([]any)[0].(map[string]any)["lease_id"]})
		a.event("lost")
		if e := a.fail("provider_report", map[string]any{"lease": l, "cost": 0.05, "release": true}); e["kind"] != "lost" || e["code"] != float64(122) {
			t.Fatalf("report of a lost lease: %v", e)
		}
		if s, r := spent(a); math.Abs(s-1.0) > 1e-9 || r != 0 {
			t.Fatalf("after the lost lease's report: spent %v reserved %v; want 1.0, 0", s, r)
		}
		b.call("release", map[string]any{"lease": took["lease"]})
		// A 429: the cool-off starts, and the lease is released.
		r = a.call("provider_report", map[string]any{"lease": gate(), "outcome": "rate_limited", "retry_after": 30, "release": true})
		if r["cooloff_until"] == nil || r["settled"] != true {
			t.Fatalf("rate-limited report with release: %v", r)
		}
		if e := a.fail("provider_acquire", map[string]any{"provider": "anthropic", "if_busy": "fail"}); e["kind"] != "busy" || e["retry_after"] == nil {
			t.Fatalf("during the cool-off: %v", e)
		}
	})
}

// failingSettle is an acquire's Held whose settle, sent with its
// release, fails (nothing is settled).
type failingSettle struct {
	*acquire.Held
	done func(governor.BudgetSettlement, error)
}

func (f *failingSettle) SettleOnRelease(_ *governor.BudgetReservation, _ []governor.BudgetAmount, done func(governor.BudgetSettlement, error)) {
	f.done = done
}

func (f *failingSettle) Release(ctx context.Context) error {
	err := f.Held.Release(ctx)
	if f.done != nil {
		f.done(governor.BudgetSettlement{}, errors.New("settle: backend down"))
	}
	return err
}

// TestProviderReportReleaseTellsAFailedSettle: a settle sent with the
// report's release that fails is the reply's error; the slot is
// released, the estimate stays counted.
func TestProviderReportReleaseTellsAFailedSettle(t *testing.T) {
	inR, inW := io.Pipe()
	a := startWrapped(t, fileStore(t), catalogOf(t, "providers:\n  anthropic: {max_concurrency: 1}\n"), inR, inW,
		func(h bridge.Held) bridge.Held { return &failingSettle{Held: h.(*acquire.Held)} })
	a.hello()
	gate := map[string]any{"provider": "anthropic", "if_busy": "fail", "budgets": []any{day(10)}, "estimate": 0.6}
	l := a.call("provider_acquire", gate)
	e := a.fail("provider_report", map[string]any{"lease": l["lease"], "cost": 0.2, "release": true})
	if e["kind"] != "backend" || !strings.Contains(e["message"].(string), "backend down") || !strings.Contains(e["message"].(string), "not settled") {
		t.Fatalf("a failed settle: %v; want a backend error saying so", e)
	}
	a.call("provider_acquire", map[string]any{"provider": "anthropic", "if_busy": "fail"}) // the slot was released
	if s, r := spent(a); s != 0 || r != 0.6 {
		t.Fatalf("spent %v reserved %v; want 0, the estimate 0.6 still reserved", s, r)
	}
}
