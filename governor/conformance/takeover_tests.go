package conformance

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/eventkind"
	"github.com/governor-dev/governor/governor/proc"
)

// backendTakeover: the old holder is replaced in one step by a lease
// with its weight and a higher token; the old one can neither renew nor
// release; an unknown lease is ErrNotHeld; an event is recorded.
func (s *suite) backendTakeover(t *testing.T) {
	b, key := s.open(t, "issue:2316")
	old := req(key, 3, 2, governor.Fail)
	res := mustAcquire(t, b, old, governor.Granted)
	w := req(key, 3, 2, governor.Wait)
	mustAcquire(t, b, w, governor.Queued)
	nu := req(key, 3, 1, governor.Fail)
	nu.Declaration.Session = "relay-2"
	got, err := b.Acquire(ctxT(t), takeover(nu, key, old.ID))
	if err != nil || got.Outcome != governor.Granted {
		t.Fatalf("Takeover = %+v, %v", got, err)
	}
	if got.Token <= res.Token {
		t.Fatalf("takeover token %d not above the old %d", got.Token, res.Token)
	}
	st := mustStatus(t, b, key)
	if st.Used != 2 || len(st.Holders) != 1 || st.Holders[0].LeaseID != nu.ID || st.Holders[0].Weight != 2 || st.Holders[0].Session != "relay-2" {
		t.Fatalf("after takeover: %+v", st)
	}
	if len(st.Waiters) != 1 || st.Counters.Takeovers != 1 {
		t.Fatalf("takeover let the waiter in or was not counted: %+v", st)
	}
	// The old holder's renewal fails, saying who took the lease.
	_, err = b.Renew(ctxT(t), governor.Renewal{Key: key, ID: old.ID, Secret: "", Token: 0, TTL: time.Minute})
	if lost := wantEnd(t, "old holder's renew", err, eventkind.Takeover, "taken over by session relay-2"); lost.End.Token != res.Token ||
		!strings.Contains(lost.Reason(), nu.ID) {
		t.Fatalf("old holder's renew: %+v; want its token %d and the new lease %s", lost, res.Token, nu.ID)
	}
	wantNotHeld(t, b, key, old.ID, "old holder's release")
	if _, err := b.Acquire(ctxT(t), takeover(req(key, 3, 1, governor.Fail), key, "unknown")); !errors.Is(err, governor.ErrNotHeld) {
		t.Fatalf("takeover of an unknown lease: %v, want ErrNotHeld", err)
	}
	evs, err := b.Events(ctxT(t), key, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range evs {
		if e.Kind == eventkind.Takeover && e.LeaseID == old.ID && e.Token == res.Token {
			found = true
		}
	}
	if !found {
		t.Fatalf("no takeover event for %s in %+v", old.ID, evs)
	}
}

// backendTakeoverEnded: a lease that expired (or was reclaimed) is
// taken over when its slot is free, recorded as a takeover naming the
// taking session; a released or unknown lease is ErrNotHeld and changes
// nothing; an ended lease whose slot was taken is Refused.
func (s *suite) backendTakeoverEnded(t *testing.T) {
	b, key := s.open(t, "issue:77")
	rel := req(key, 1, 1, governor.Fail)
	mustAcquire(t, b, rel, governor.Granted)
	release(t, b, key, rel.ID)
	if _, err := b.Acquire(ctxT(t), takeover(req(key, 1, 1, governor.Fail), key, rel.ID)); !errors.Is(err, governor.ErrNotHeld) {
		t.Fatalf("takeover of a released lease: %v, want ErrNotHeld", err)
	}
	if st := mustStatus(t, b, key); st.Used != 0 || len(st.Holders) != 0 || st.Counters.Takeovers != 0 {
		t.Fatalf("a refused takeover changed the state: %+v", st)
	}
	exp := req(key, 1, 1, governor.Fail)
	exp.TTL = 300 * time.Millisecond
	re := mustAcquire(t, b, exp, governor.Granted)
	s.h.Advance(t, time.Second)
	nu := req(key, 1, 1, governor.Fail)
	nu.Declaration.Session = "relay-3"
	got, err := b.Acquire(ctxT(t), takeover(nu, key, exp.ID))
	if err != nil || got.Outcome != governor.Granted || got.Token <= re.Token {
		t.Fatalf("takeover of an expired lease = %+v, %v; want granted above token %d", got, err, re.Token)
	}
	st := mustStatus(t, b, key)
	if len(st.Holders) != 1 || st.Holders[0].LeaseID != nu.ID || st.Counters.Takeovers != 1 {
		t.Fatalf("after the takeover of an expired lease: %+v", st)
	}
	evs, err := b.Events(ctxT(t), key, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range evs {
		if e.LeaseID == exp.ID {
			kinds = append(kinds, e.Kind)
			if e.Kind == eventkind.Takeover && (!strings.Contains(e.Detail, "taken over by session relay-3") || !strings.Contains(e.Detail, nu.ID)) {
				t.Fatalf("takeover event says %q; want session relay-3 and lease %s", e.Detail, nu.ID)
			}
		}
	}
	if strings.Join(kinds, ",") != eventkind.Expired+","+eventkind.Takeover {
		t.Fatalf("events of the expired lease = %v (%+v); want expired, then takeover", kinds, evs)
	}
	// Taken over already: nothing more to take.
	if _, err := b.Acquire(ctxT(t), takeover(req(key, 1, 1, governor.Fail), key, exp.ID)); !errors.Is(err, governor.ErrNotHeld) {
		t.Fatalf("second takeover of the same expired lease: %v, want ErrNotHeld", err)
	}
	// Expired while another holds the slot: refused, nothing granted.
	release(t, b, key, nu.ID)
	exp2 := req(key, 1, 1, governor.Fail)
	exp2.TTL = 300 * time.Millisecond
	mustAcquire(t, b, exp2, governor.Granted)
	s.h.Advance(t, time.Second)
	other := req(key, 1, 1, governor.Fail)
	mustAcquire(t, b, other, governor.Granted)
	late := req(key, 1, 1, governor.Fail)
	got, err = b.Acquire(ctxT(t), takeover(late, key, exp2.ID))
	if err != nil || got.Outcome != governor.Refused || len(got.Status.Holders) != 1 || got.Status.Holders[0].LeaseID != other.ID {
		t.Fatalf("takeover of an expired lease whose slot is taken = %+v, %v; want Refused naming %s", got, err, other.ID)
	}
	if st := mustStatus(t, b, key); len(st.Holders) != 1 || st.Counters.Takeovers != 1 {
		t.Fatalf("a refused takeover changed the state: %+v", st)
	}
}

// events: expiry and reclaim are recorded, with since filtering.
func (s *suite) events(t *testing.T) {
	b, key := s.open(t, "plan:7")
	a := req(key, 2, 1, governor.Fail)
	a.TTL = 300 * time.Millisecond
	ra := mustAcquire(t, b, a, governor.Granted)
	c := req(key, 2, 1, governor.Fail)
	rc := mustAcquire(t, b, c, governor.Granted)
	s.h.Advance(t, time.Second)
	if ok, err := actChanged(b.Admin(ctxT(t), key, governor.Action{Kind: eventkind.Reclaimed, IDs: []string{c.ID}, Token: rc.Token})); err != nil || !ok {
		t.Fatalf("Reclaim = %v, %v", ok, err)
	}
	evs, err := b.Events(ctxT(t), key, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]string{}
	for _, e := range evs {
		kinds[e.LeaseID] = e.Kind
		if e.At.IsZero() {
			t.Fatalf("event without time: %+v", e)
		}
	}
	if kinds[a.ID] != eventkind.Expired || kinds[c.ID] != eventkind.Reclaimed {
		t.Fatalf("events = %+v; want %s expired (token %d) and %s reclaimed", evs, a.ID, ra.Token, c.ID)
	}
	// The store's clock may be far from ours (miniredis): "later" is
	// relative to the events' own times.
	later, err := b.Events(ctxT(t), key, evs[len(evs)-1].At.Add(time.Hour))
	if err != nil || len(later) != 0 {
		t.Fatalf("events since the future = %+v, %v", later, err)
	}
}

// watchdogKillEvent: what a run's watchdog did is an event naming the
// lease, its token and the detail; the lease stays held (the event ends
// nothing).
func (s *suite) watchdogKillEvent(t *testing.T) {
	b := s.h.Open(t)
	key := governor.Key{Project: project(), Resource: "heavy"}
	r := req(key, 1, 1, governor.Fail)
	res := mustAcquire(t, b, r, governor.Granted)
	const why = "no lease renewal came by the leases' deadline; killed 2 processes"
	if err := b.Record(ctxT(t), key, governor.Event{Kind: eventkind.WatchdogKill, LeaseID: r.ID, Token: res.Token, Detail: why}); err != nil {
		t.Fatalf("NoteWatchdogKill: %v", err)
	}
	evs, err := b.Events(ctxT(t), key, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].Kind != eventkind.WatchdogKill || evs[0].LeaseID != r.ID || evs[0].Token != res.Token || evs[0].Detail != why {
		t.Fatalf("events = %+v; want one %s of %s (token %d) saying %q", evs, eventkind.WatchdogKill, r.ID, res.Token, why)
	}
	if st := mustStatus(t, b, key); st.Used != 1 {
		t.Fatalf("used %d after the event, want the lease still held", st.Used)
	}
}

// seq: numbers never repeat; a stale token is refused and changes nothing.
func (s *suite) seq(t *testing.T) {
	b := s.h.Open(t)
	other := s.h.Open(t)
	p := project()
	for i := int64(1); i <= 3; i++ {
		n, err := b.NextSeq(ctxT(t), p, "release-version", 100)
		if err != nil || n != i {
			t.Fatalf("NextSeq #%d = %d, %v", i, n, err)
		}
	}
	// A newer holder (taken over) moves on from the same sequence.
	if n, err := other.NextSeq(ctxT(t), p, "release-version", 200); err != nil || n != 4 {
		t.Fatalf("NextSeq with a newer token = %d, %v; want 4", n, err)
	}
	if _, err := b.NextSeq(ctxT(t), p, "release-version", 100); !errors.Is(err, governor.ErrStaleToken) {
		t.Fatalf("NextSeq with a stale token: %v, want ErrStaleToken", err)
	}
	if n, err := other.NextSeq(ctxT(t), p, "release-version", 200); err != nil || n != 5 {
		t.Fatalf("after a refused stale write, NextSeq = %d, %v; want 5", n, err)
	}
	if n, err := b.NextSeq(ctxT(t), p, "other-seq", 1); err != nil || n != 1 {
		t.Fatalf("a second sequence = %d, %v; want 1", n, err)
	}
	if names, _ := b.Resources(ctxT(t), p); len(names) != 0 {
		t.Fatalf("sequences listed as resources: %v", names)
	}
}

// governorTakeover: refused while the owner lives, allowed when it is
// proven dead or forced, and after expiry; the old holder learns it lost
// the lease; tokens increase.
func (s *suite) governorTakeover(t *testing.T) {
	p := project()
	raw := s.h.Open(t)
	g := newGovernor(t, s.h.Open(t), governor.Options{Project: p, Session: "relay-2"})
	// The old holder heartbeats often, so that it learns of the takeover
	// soon, with a TTL that a starved renewal does not outlive first (600
	// ms did, at load 30: "lease lost", not the takeover).
	old := newGovernor(t, s.h.Open(t), governor.Options{Project: p, Session: "relay-1", TTL: 3 * time.Second, Heartbeat: 200 * time.Millisecond})
	l := mustLease(t, old, "lifecycle", governor.AcquireOptions{Limit: 1})
	// Alive (this very process): refused, naming it.
	_, err := g.Takeover(ctxT(t), "lifecycle", 1, governor.TakeoverOptions{Session: "relay-1"})
	var alive *governor.OwnerAliveError
	if !errors.As(err, &alive) || alive.Holder.LeaseID != l.ID() {
		t.Fatalf("takeover of a live owner: %v, want *OwnerAliveError", err)
	}
	// Forced.
	ls, err := g.Takeover(ctxT(t), "lifecycle", 1, governor.TakeoverOptions{Session: "relay-1", Force: true})
	if err != nil || len(ls) != 1 || ls[0].Token() <= l.Token() {
		t.Fatalf("forced takeover = %v, %v", ls, err)
	}
	select {
	case <-l.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the old holder never learned its lease was taken over")
	}
	// It learned why: the takeover, and who took it; and its lost
	// event says so too.
	wantEnd(t, "old holder's Err", l.Err(), eventkind.Takeover, "taken over by session relay-2")
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		evs, err := g.Events(ctxT(t), "lifecycle", time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		var lost *governor.Event
		for i := range evs {
			if evs[i].Kind == eventkind.Lost && evs[i].LeaseID == l.ID() {
				lost = &evs[i]
			}
		}
		if lost != nil {
			if !strings.Contains(lost.Detail, "taken over by session relay-2") || !strings.Contains(lost.Detail, ls[0].ID()) {
				t.Fatalf("the old holder's lost event says %q; want the takeover by session relay-2, lease %s", lost.Detail, ls[0].ID())
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no lost event for %s: %+v", l.ID(), evs)
		}
	}
	if err := ls[0].Release(); err != nil {
		t.Fatal(err)
	}

	// Proven dead on this host.
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	key := governor.Key{Project: p, Resource: "merge"}
	dead := req(key, 1, 1, governor.Fail)
	dead.Declaration = governor.Declaration{Session: "crashed", HostID: proc.Current().HostID, PID: cmd.Process.Pid}
	crashed := s.h.Open(t) // closed at once, as by its process's death
	rd := mustAcquire(t, crashed, dead, governor.Granted)
	_ = crashed.Close()
	ls, err = g.Takeover(ctxT(t), "merge", 1, governor.TakeoverOptions{LeaseID: dead.ID})
	if err != nil || len(ls) != 1 || ls[0].Token() <= rd.Token {
		t.Fatalf("takeover of a dead owner = %v, %v", ls, err)
	}
	_ = ls[0].Release()

	// Another host: cannot be proven dead.
	far := req(key, 1, 1, governor.Fail)
	far.Declaration = governor.Declaration{Session: "far", HostID: "elsewhere", Host: "other-box", PID: 1}
	mustAcquire(t, raw, far, governor.Granted)
	if _, err := g.Takeover(ctxT(t), "merge", 1, governor.TakeoverOptions{LeaseID: far.ID}); !errors.Is(err, governor.ErrOwnerAlive) {
		t.Fatalf("takeover across hosts: %v, want ErrOwnerAlive", err)
	}
	release(t, raw, key, far.ID)

	// Expired: its slot is simply free.
	exp := req(key, 1, 1, governor.Fail)
	exp.TTL = 300 * time.Millisecond
	re := mustAcquire(t, raw, exp, governor.Granted)
	s.h.Advance(t, time.Second)
	ls, err = g.Takeover(ctxT(t), "merge", 1, governor.TakeoverOptions{LeaseID: exp.ID})
	if err != nil || len(ls) != 1 || ls[0].Token() <= re.Token {
		t.Fatalf("takeover of an expired lease = %v, %v", ls, err)
	}
	evs, err := g.Events(ctxT(t), "merge", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	recorded := false
	for _, e := range evs {
		recorded = recorded || (e.Kind == eventkind.Takeover && e.LeaseID == exp.ID && strings.Contains(e.Detail, "taken over by session relay-2"))
	}
	if !recorded {
		t.Fatalf("the takeover of expired lease %s is not recorded naming session relay-2: %+v", exp.ID, evs)
	}
	_ = ls[0].Release()
	// Released (ls[0]) or never existed: nothing to take over.
	for _, id := range []string{ls[0].ID(), "0123456789abcdef"} {
		if _, err := g.Takeover(ctxT(t), "merge", 1, governor.TakeoverOptions{LeaseID: id}); !errors.Is(err, governor.ErrNotHeld) || !strings.Contains(err.Error(), "nothing to take over") {
			t.Fatalf("takeover of lease %s, released or unknown: %v, want ErrNotHeld, nothing to take over", id, err)
		}
	}
	if st, err := g.Status(ctxT(t), "merge"); err != nil || len(st.Holders) != 0 {
		t.Fatalf("a refused takeover left holders: %+v, %v", st, err)
	}

	if _, err := g.Takeover(ctxT(t), "merge", 1, governor.TakeoverOptions{Session: "nobody"}); !errors.Is(err, governor.ErrNotHeld) {
		t.Fatalf("takeover of a session holding nothing: %v, want ErrNotHeld", err)
	}
}

// governorTakeoverSession: a relay takes over every lease of its
// predecessor's session across the project's resources, in lock order,
// each recorded; an owner that may be alive refuses the whole takeover
// before anything is taken; other sessions' leases are untouched.
func (s *suite) governorTakeoverSession(t *testing.T) {
	p := project()
	raw := s.h.Open(t)
	g := newGovernor(t, s.h.Open(t), governor.Options{Project: p, Session: "relay-2", LockOrder: []string{"plan", "issue"}})
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	deadDecl := governor.Declaration{Session: "relay-1", HostID: proc.Current().HostID, PID: cmd.Process.Pid}
	old := map[string]string{}
	crashed := s.h.Open(t) // closed at once, as by its process's death
	for _, r := range []string{"zeta", "issue:1", "plan:9"} {
		q := req(governor.Key{Project: p, Resource: r}, 2, 1, governor.Fail)
		q.Declaration = deadDecl
		mustAcquire(t, crashed, q, governor.Granted)
		old[r] = q.ID
	}
	_ = crashed.Close()
	other := req(governor.Key{Project: p, Resource: "issue:1"}, 2, 1, governor.Fail)
	other.Declaration = governor.Declaration{Session: "bystander", HostID: "elsewhere", Host: "other-box", PID: 1}
	mustAcquire(t, raw, other, governor.Granted)
	// One lease of relay-1 whose owner may be alive: nothing is taken.
	farKey := governor.Key{Project: p, Resource: "alpha"}
	far := req(farKey, 1, 1, governor.Fail)
	far.Declaration = governor.Declaration{Session: "relay-1", HostID: "elsewhere", Host: "other-box", PID: 1}
	mustAcquire(t, raw, far, governor.Granted)
	if ls, err := g.TakeoverSession(ctxT(t), "relay-1", governor.TakeoverOptions{}); !errors.Is(err, governor.ErrOwnerAlive) || len(ls) != 0 {
		t.Fatalf("session takeover with an owner that may be alive = %v, %v; want ErrOwnerAlive and nothing", ls, err)
	}
	for r, id := range old {
		if st := mustStatus(t, raw, governor.Key{Project: p, Resource: r}); st.Counters.Takeovers != 0 || !slicesHasLease(st.Holders, id) {
			t.Fatalf("a refused session takeover changed %s: %+v", r, st)
		}
	}
	release(t, raw, farKey, far.ID)
	ls, err := g.TakeoverSession(ctxT(t), "relay-1", governor.TakeoverOptions{})
	if err != nil {
		t.Fatalf("session takeover: %v", err)
	}
	var order []string
	for _, l := range ls {
		order = append(order, l.Resource())
		st := mustStatus(t, raw, l.Key())
		for _, h := range st.Holders {
			if h.Session == "relay-1" || (h.LeaseID == l.ID() && h.Session != "relay-2") {
				t.Fatalf("after the session takeover, %s: %+v", l.Resource(), st.Holders)
			}
		}
		evs, err := raw.Events(ctxT(t), l.Key(), time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		recorded := false
		for _, e := range evs {
			recorded = recorded || (e.Kind == eventkind.Takeover && e.LeaseID == old[l.Resource()] && strings.Contains(e.Detail, "session relay-2"))
		}
		if !recorded {
			t.Fatalf("%s: takeover of %s not recorded: %+v", l.Resource(), old[l.Resource()], evs)
		}
	}
	if strings.Join(order, ",") != "plan:9,issue:1,zeta" {
		t.Fatalf("session takeover order = %v; want lock order plan:9, issue:1, zeta", order)
	}
	if st := mustStatus(t, raw, other.Key); !slicesHasLease(st.Holders, other.ID) {
		t.Fatalf("another session's lease was taken: %+v", st.Holders)
	}
	if _, err := g.TakeoverSession(ctxT(t), "relay-1", governor.TakeoverOptions{}); !errors.Is(err, governor.ErrNotHeld) {
		t.Fatalf("second session takeover: %v, want ErrNotHeld", err)
	}
	for _, l := range ls {
		_ = l.Release()
	}
}

func slicesHasLease(hs []governor.Holder, id string) bool {
	for _, h := range hs {
		if h.LeaseID == id {
			return true
		}
	}
	return false
}
