package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/eventkind"
	"github.com/governor-dev/governor/internal/leasetest"
	"github.com/governor-dev/governor/internal/proctest"
	"github.com/governor-dev/governor/internal/view"
)

// startRun starts `governor run --resource heavy --if-busy wait -- true`
// and waits until it is queued (n waiters in all); it returns the
// command, its stderr and its waiter.
func startRun(t *testing.T, tg *target, g *governor.Governor, n int) (*exec.Cmd, *bytes.Buffer, governor.Waiter) {
	t.Helper()
	return startWaiting(t, tg, g, n, "run", "--resource", "heavy", "--if-busy", "wait", "--", "true")
}

// startWaiting starts governor with args, which must queue on heavy, and
// waits until it is queued (n waiters in all); it returns the command,
// its stderr and its waiter.
func startWaiting(t *testing.T, tg *target, g *governor.Governor, n int, args ...string) (*exec.Cmd, *bytes.Buffer, governor.Waiter) {
	t.Helper()
	c := tg.command(args...)
	var errb bytes.Buffer
	c.Stderr = &errb
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Process.Kill() })
	var st governor.Status
	eventually(t, 30*time.Second, "the run did not queue", func() bool {
		st = tg.status(t, g, "heavy")
		return len(st.Waiters) == n
	})
	return c, &errb, st.Waiters[n-1]
}

// waitExit waits for c and returns its exit code.
func waitExit(t *testing.T, c *exec.Cmd) int { return proctest.WaitExit(t, c, 30*time.Second, nil) }

// A waiting governor run that is cancelled exits 73 saying who; bad
// input changes nothing.
func TestCancelEndsWaitingRun(t *testing.T) {
	t.Parallel()
	runTargets(t, "", func(t *testing.T, tg *target) {
		g := tg.governor(t)
		l := leasetest.HoldHeavy(t, g)
		defer l.Release()
		c, errb, w := startRun(t, tg, g, 1)
		for _, bad := range []struct {
			args []string
			code int
			want string
		}{
			{[]string{"cancel", "heavy"}, 125, "exactly one of --waiter ID and --session"},
			{[]string{"cancel", "heavy", "--waiter", w.ID, "--session", "x"}, 125, "exactly one of"},
			{[]string{"cancel", "haevy", "--waiter", w.ID}, 125, `"haevy" is unknown`},
			{[]string{"cancel", "heavy", "--waiter", "nobody-at-all"}, 122, "is not queued on heavy"},
			{[]string{"cancel", "heavy", "--waiter", w.ID, "--by", "bad\x1bname"}, 125, "control characters"},
		} {
			code, _, stderr := tg.run(t, bad.args...)
			if code != bad.code || !strings.Contains(stderr, bad.want) {
				t.Fatalf("%v: exit %d, stderr %q; want %d saying %q", bad.args, code, stderr, bad.code, bad.want)
			}
		}
		if st := tg.status(t, g, "heavy"); len(st.Waiters) != 1 {
			t.Fatalf("bad input changed the queue: %+v", st.Waiters)
		}
		code, out, stderr := tg.run(t, "cancel", "heavy", "--waiter", w.ID[:12], "--by", "alice")
		if code != 0 || !strings.Contains(out, "cancelled waiter "+w.ID) {
			t.Fatalf("cancel: exit %d, out %q, stderr %q", code, out, stderr)
		}
		if code := waitExit(t, c); code != 73 || !strings.Contains(errb.String(), `as "alice"`) {
			t.Fatalf("cancelled run: exit %d, stderr %q; want 73 saying by alice", code, errb)
		}
		st := tg.status(t, g, "heavy")
		if len(st.Waiters) != 0 || len(st.Holders) != 1 {
			t.Fatalf("after cancel: %+v", st)
		}
		evs, err := g.Backend().Events(context.Background(), governor.Key{Project: runProject, Resource: "heavy"}, time.Time{})
		if err != nil || len(evs) == 0 || evs[len(evs)-1].Kind != eventkind.Cancelled || !strings.HasSuffix(evs[len(evs)-1].By, `) as "alice"`) || !strings.Contains(evs[len(evs)-1].By, "(session ") {
			t.Fatalf("events %+v, %v; want a cancelled event by alice", evs, err)
		}
		if code, out, _ := tg.run(t, "events", "heavy"); code != 0 || !strings.Contains(out, "cancelled by an operator; by ") || !strings.Contains(out, `as "alice"`) {
			t.Fatalf("governor events: exit %d, %q; want the cancel naming alice", code, out)
		}
	})
}

// A waiting governor acquire that is cancelled ends as a run does: exit
// 73 saying who (one mapping of acquire failures: runner.AcquireFailed).
func TestCancelEndsWaitingAcquire(t *testing.T) {
	t.Parallel()
	runTargets(t, "", func(t *testing.T, tg *target) {
		g := tg.governor(t)
		l := leasetest.HoldHeavy(t, g)
		defer l.Release()
		c, errb, w := startWaiting(t, tg, g, 1, "acquire", "heavy", "--limit", "1", "--if-busy", "wait")
		if code, out, stderr := tg.run(t, "cancel", "heavy", "--waiter", w.ID, "--by", "alice"); code != 0 {
			t.Fatalf("cancel: exit %d, out %q, stderr %q", code, out, stderr)
		}
		if code := waitExit(t, c); code != 73 || !strings.Contains(errb.String(), "heavy: not acquired: the wait was") ||
			!strings.Contains(errb.String(), `as "alice"`) {
			t.Fatalf("cancelled acquire: exit %d, stderr %q; want 73 saying it was not acquired, by alice", code, errb)
		}
	})
}

// A paused resource grants nothing new; slots shows it; resume serves
// the waiting run at once.
func TestPauseResume(t *testing.T) {
	t.Parallel()
	runTargets(t, "", func(t *testing.T, tg *target) {
		g := tg.governor(t)
		if code, out, stderr := tg.run(t, "pause", "heavy", "--by", "carol"); code != 0 || !strings.Contains(out, "paused heavy") {
			t.Fatalf("pause: exit %d, %q, %q", code, out, stderr)
		}
		code, _, stderr := tg.run(t, "run", "--resource", "heavy", "--", "true")
		if code != 73 || !strings.Contains(stderr, `as "carol": nothing new is granted until 'governor resume heavy'`) {
			t.Fatalf("run --if-busy fail on a paused resource: exit %d, %q; want 73 saying it is paused", code, stderr)
		}
		c, _, _ := startRun(t, tg, g, 1)
		code, out, _ := tg.run(t, "slots", "heavy")
		if code != 0 || !strings.Contains(out, "PAUSED since") || !strings.Contains(out, `as "carol"`) {
			t.Fatalf("slots of a paused resource: %q", out)
		}
		code, out, _ = tg.run(t, "--json", "slots", "heavy")
		var sj view.Slots
		if err := json.Unmarshal([]byte(out), &sj); code != 0 || err != nil || sj.Resources[0].Paused == nil ||
			!strings.HasSuffix(sj.Resources[0].Paused.By, `as "carol"`) || len(sj.Resources[0].Waiters) != 1 {
			t.Fatalf("slots --json of a paused resource: %v %q", err, out)
		}
		if st := tg.status(t, g, "heavy"); st.Used != 0 {
			t.Fatalf("a paused resource granted: %+v", st)
		}
		if code, out, stderr := tg.run(t, "resume", "heavy"); code != 0 || !strings.Contains(out, "resumed heavy") {
			t.Fatalf("resume: exit %d, %q, %q", code, out, stderr)
		}
		if code := waitExit(t, c); code != 0 {
			t.Fatalf("the waiting run after resume: exit %d", code)
		}
		if code, _, stderr := tg.run(t, "pause", "nosuch"); code != 125 || !strings.Contains(stderr, `"nosuch" is unknown`) {
			t.Fatalf("pause of an unknown resource: exit %d, %q", code, stderr)
		}
	})
}

// governor limit: raising hands the room to a waiting run at once;
// lowering below the use grants nothing until the use falls under it;
// bad input names the value and changes nothing; --clear goes back.
func TestLimitLive(t *testing.T) {
	t.Parallel()
	runTargets(t, "", func(t *testing.T, tg *target) {
		g := tg.governor(t)
		ctx := context.Background()
		l1, err := g.Acquire(ctx, "heavy", governor.AcquireOptions{Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		a, _, _ := startRun(t, tg, g, 1)
		if code, out, stderr := tg.run(t, "limit", "heavy", "2", "--by", "ops"); code != 0 || !strings.Contains(out, "set live to 2") {
			t.Fatalf("limit heavy 2: exit %d, %q, %q", code, out, stderr)
		}
		if code := waitExit(t, a); code != 0 {
			t.Fatalf("the run waiting when the limit was raised: exit %d", code)
		}
		if len(tg.status(t, g, "heavy").Holders) != 1 {
			t.Fatal("the first holder lost its lease")
		}
		// The process asks for 1 but the live 2 is in force.
		l2, err := g.Acquire(ctx, "heavy", governor.AcquireOptions{Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range [][]string{{"limit", "heavy", "0"}, {"limit", "heavy", "abc"}, {"limit", "heavy"},
			{"limit", "heavy", "3", "--clear"}, {"limit", "heavy", "100000000"}} {
			code, _, stderr := tg.run(t, bad...)
			if code != 125 || (len(bad) == 3 && bad[2] != "--clear" && !strings.Contains(stderr, `"`+bad[2]+`"`)) {
				t.Fatalf("%v: exit %d, %q; want 125 naming the value", bad, code, stderr)
			}
		}
		if st := tg.status(t, g, "heavy"); st.Limit != 2 || st.LiveLimit == nil || !strings.HasSuffix(st.LiveLimit.By, `as "ops"`) {
			t.Fatalf("bad input changed the limit: %+v", st)
		}
		code, out, _ := tg.run(t, "limit", "heavy", "1")
		if code != 0 || !strings.Contains(out, "nothing is granted until the use falls under 1") {
			t.Fatalf("limit heavy 1 under use 2: exit %d, %q", code, out)
		}
		b, _, _ := startRun(t, tg, g, 1)
		if err := l1.Release(); err != nil {
			t.Fatal(err)
		}
		if st := tg.status(t, g, "heavy"); st.Used != 1 || len(st.Waiters) != 1 {
			t.Fatalf("granted at use %d under live limit 1: %+v", st.Used, st)
		}
		if err := l2.Release(); err != nil {
			t.Fatal(err)
		}
		if code := waitExit(t, b); code != 0 {
			t.Fatalf("the run waiting for the use to fall: exit %d", code)
		}
		code, _, stderr := tg.run(t, "run", "--resource", "heavy", "--limit", "3", "--", "true")
		if code != 0 || !strings.Contains(stderr, "--limit 3 is not applied: the limit in force is 1, from a live limit set by") {
			t.Fatalf("run --limit 3 under a live limit 1: exit %d, %q; want the note naming the live limit", code, stderr)
		}
		code, out, _ = tg.run(t, "config", "show")
		if code != 0 || !strings.Contains(out, "live: set by") {
			t.Fatalf("config show does not say the limit is live: %q", out)
		}
		code, out, _ = tg.run(t, "limit", "heavy", "--clear")
		if code != 0 || !strings.Contains(out, "cleared; the limit in force is 1") {
			t.Fatalf("limit --clear: exit %d, %q", code, out)
		}
		code, out, _ = tg.run(t, "--json", "slots", "heavy")
		var sj view.Slots
		if err := json.Unmarshal([]byte(out), &sj); code != 0 || err != nil || sj.Resources[0].LiveLimit != nil || sj.Resources[0].LimitSource != "asked" {
			t.Fatalf("slots --json after --clear: %v %q", err, out)
		}
	})
}
