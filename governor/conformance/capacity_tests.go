package conformance

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/capacity"
	"github.com/governor-dev/governor/governor/eventkind"
)

// Capacity leases (issue 44, package capacity): a share of a resource's
// slots kept as a holder of its weight, on every backend.

// capLease is one capacity lease of the tests: its request and the last
// share it got.
type capLease struct {
	r     governor.Request
	share capacity.Share
	token int64
}

func newCapLease(key governor.Key, limit int, ttl time.Duration) *capLease {
	r := req(key, limit, 1, governor.Fail)
	r.TTL = ttl
	return &capLease{r: r}
}

// ask refreshes l on b, wanting want with inUse in use, and returns its
// share; it fails t on an error.
func (l *capLease) ask(t *testing.T, b governor.Backend, want, inUse int) capacity.Share {
	t.Helper()
	sh, err := l.try(t, b, capacity.Ask{Want: want, InUse: inUse})
	if err != nil {
		t.Fatalf("capacity lease %s want %d in use %d: %v", l.r.ID, want, inUse, err)
	}
	return sh
}

// try refreshes l with a (Held and Token filled in from l's last
// answer).
func (l *capLease) try(t *testing.T, b governor.Backend, a capacity.Ask) (capacity.Share, error) {
	t.Helper()
	a.Held, a.Token = l.share.Share, l.token
	r := l.r
	r.Capacity = &a
	res, err := b.Acquire(ctxT(t), r)
	if err != nil {
		return capacity.Share{}, err
	}
	if res.Outcome != governor.Granted || res.Share == nil {
		t.Fatalf("capacity lease %s: outcome %v share %v, want granted with a share", l.r.ID, res.Outcome, res.Share)
	}
	if res.Share.Held > 0 && res.Token == 0 || res.Share.Held == 0 && res.Token != 0 {
		t.Fatalf("capacity lease %s: held %d with token %d", l.r.ID, res.Share.Held, res.Token)
	}
	if !a.Release && !res.Expires.After(time.Now().Add(-time.Minute)) {
		t.Fatalf("capacity lease %s: expiry %v", l.r.ID, res.Expires)
	}
	l.share, l.token = *res.Share, res.Token
	return l.share, nil
}

// wantShare fails t unless sh has share and held.
func wantShare(t *testing.T, what string, sh capacity.Share, share, held int) {
	t.Helper()
	if sh.Share != share || sh.Held != held {
		t.Fatalf("%s: %+v, want share %d held %d", what, sh, share, held)
	}
}

// wantUsed fails t unless key's weight held is used, at most its limit.
func wantUsed(t *testing.T, b governor.Backend, key governor.Key, used int) governor.Status {
	t.Helper()
	st := mustStatus(t, b, key)
	if st.Used != used || st.Used > st.Limit {
		t.Fatalf("used %d of limit %d, want %d: %+v", st.Used, st.Limit, used, st.Holders)
	}
	return st
}

// capacityFairShare: the first lease gets all it wants; a newcomer at
// saturation is entitled to half but gets nothing until the first,
// told others wait, shrinks to its entitlement (its calls still in use
// keep their weight until it says they ended); then the newcomer's
// share grows. The weight held never passes the limit.
func (s *suite) capacityFairShare(t *testing.T) {
	b, key := s.open(t, "provider:cap")
	a, n := newCapLease(key, 10, 30*time.Second), newCapLease(key, 10, 30*time.Second)
	wantShare(t, "the first lease", a.ask(t, b, 10, 0), 10, 10)
	wantUsed(t, b, key, 10)
	sh := n.ask(t, b, 10, 0)
	wantShare(t, "the newcomer at saturation", sh, 0, 0)
	if sh.Entitled != 5 || sh.Waiting {
		t.Fatalf("the newcomer: %+v, want entitled 5, nobody else waiting", sh)
	}
	sh = a.ask(t, b, 10, 10)
	wantShare(t, "the first lease, all in use, after the newcomer asked", sh, 5, 10)
	if !sh.Waiting || sh.Entitled != 5 {
		t.Fatalf("the first lease: %+v, want entitled 5 and others waiting", sh)
	}
	wantShare(t, "the newcomer before the first's calls ended", n.ask(t, b, 10, 0), 0, 0)
	wantShare(t, "the first lease, its calls above its share ended", a.ask(t, b, 10, 5), 5, 5)
	wantUsed(t, b, key, 5)
	wantShare(t, "the newcomer after", n.ask(t, b, 10, 0), 5, 5)
	st := wantUsed(t, b, key, 10)
	if len(st.Holders) != 2 {
		t.Fatalf("holders %+v, want the two leases", st.Holders)
	}
	// Max-min: a lease that wants less than an equal part gets it all.
	wantShare(t, "the first, wanting 2", a.ask(t, b, 2, 2), 2, 2)
	if sh := n.ask(t, b, 10, 5); sh.Share != 8 || sh.Entitled != 8 {
		t.Fatalf("the newcomer beside a lease wanting 2: %+v, want share 8", sh)
	}
	wantUsed(t, b, key, 10)
}

// capacityGiveBack: a lease that stops asking gives its share back at
// its refresh; a release drops its holder and its want at once, and the
// other lease is then entitled to all.
func (s *suite) capacityGiveBack(t *testing.T) {
	b, key := s.open(t, "provider:cap")
	a, n := newCapLease(key, 6, 30*time.Second), newCapLease(key, 6, 30*time.Second)
	wantShare(t, "the first", a.ask(t, b, 3, 0), 3, 3)
	wantShare(t, "the second", n.ask(t, b, 3, 0), 3, 3)
	wantShare(t, "the first wanting nothing", a.ask(t, b, 0, 0), 0, 0)
	wantUsed(t, b, key, 3)
	if sh := n.ask(t, b, 6, 3); sh.Share != 6 {
		t.Fatalf("the second wanting all: %+v, want 6", sh)
	}
	wantShare(t, "the first asking again", a.ask(t, b, 6, 0), 0, 0)
	if _, err := a.try(t, b, capacity.Ask{Release: true}); err != nil {
		t.Fatalf("release: %v", err)
	}
	if sh := n.ask(t, b, 6, 6); sh.Entitled != 6 || sh.Waiting {
		t.Fatalf("the second after the first's release: %+v, want entitled to all, nobody waiting", sh)
	}
	if _, err := n.try(t, b, capacity.Ask{Release: true}); err != nil {
		t.Fatalf("release: %v", err)
	}
	st := wantUsed(t, b, key, 0)
	if len(st.Holders) != 0 || st.Counters.Released != 1 {
		t.Fatalf("after both releases: %+v", st)
	}
}

// capacityExpiry: a lease that is not refreshed expires with its share,
// which the other lease then gets.
func (s *suite) capacityExpiry(t *testing.T) {
	b, key := s.open(t, "provider:cap")
	a, n := newCapLease(key, 4, 2*time.Second), newCapLease(key, 4, time.Minute)
	wantShare(t, "the first", a.ask(t, b, 4, 0), 4, 4)
	wantShare(t, "the second", n.ask(t, b, 4, 0), 0, 0)
	s.h.Advance(t, 3*time.Second)
	wantShare(t, "the second after the first's lease expired", n.ask(t, b, 4, 0), 4, 4)
	wantUsed(t, b, key, 4)
	// A lease that expired while paused asks again: it holds nothing,
	// and a paused resource grows no share.
	b2, key2 := s.open(t, "provider:cap")
	e := newCapLease(key2, 4, 2*time.Second)
	wantShare(t, "a short lease", e.ask(t, b2, 2, 0), 2, 2)
	if _, err := b2.Admin(ctxT(t), key2, governor.Action{Kind: eventkind.Paused, By: "test"}); err != nil {
		t.Fatal(err)
	}
	s.h.Advance(t, 3*time.Second)
	wantShare(t, "the short lease, expired while paused, asking again", e.ask(t, b2, 2, 0), 0, 0)
	wantUsed(t, b2, key2, 0)
}

// capacityQueue: single grants and shares share the limit: a queued
// waiter competes as one more lease, no share grows while it waits, and
// a share that shrinks hands its room to it at once.
func (s *suite) capacityQueue(t *testing.T) {
	b, key := s.open(t, "provider:cap")
	a := newCapLease(key, 4, time.Minute)
	wantShare(t, "the lease", a.ask(t, b, 4, 0), 4, 4)
	mustAcquire(t, b, req(key, 4, 1, governor.Fail), governor.Refused)
	w := req(key, 4, 2, governor.Wait)
	mustAcquire(t, b, w, governor.Queued)
	sh := a.ask(t, b, 4, 0)
	wantShare(t, "the lease beside a waiter", sh, 2, 2)
	if !sh.Waiting {
		t.Fatalf("the lease beside a waiter: %+v, want waiting", sh)
	}
	mustAcquire(t, b, w, governor.Granted)
	wantShare(t, "the lease beside the holder", a.ask(t, b, 4, 2), 2, 2)
	wantUsed(t, b, key, 4)
	release(t, b, key, w.ID)
	wantShare(t, "the lease after the release", a.ask(t, b, 4, 2), 4, 4)
}

// capacityRefused: a resource under a queue policy refuses capacity
// leases, changing nothing; a wrong secret is ErrNotOwner.
func (s *suite) capacityRefused(t *testing.T) {
	b, key := s.open(t, "provider:cap")
	h := preq(key, 2, 1, governor.Fail, three, "default", "")
	mustAcquire(t, b, h, governor.Granted)
	l := newCapLease(key, 2, time.Minute)
	if _, err := l.try(t, b, capacity.Ask{Want: 1}); !errors.Is(err, governor.ErrInvalid) {
		t.Fatalf("a capacity lease under a queue policy: %v, want ErrInvalid", err)
	}
	wantUsed(t, b, key, 1)
	b2, key2 := s.open(t, "provider:cap")
	o := newCapLease(key2, 2, time.Minute)
	o.r = ownedReq(key2, 2, 1, governor.Fail)
	o.r.Secret = ownedReq(key2, 2, 1, governor.Fail).Secret
	if _, err := o.try(t, b2, capacity.Ask{Want: 1}); !errors.Is(err, governor.ErrNotOwner) {
		t.Fatalf("a wrong secret: %v, want ErrNotOwner", err)
	}
}

// capacityLearning: after the store lost its data, a lease that comes
// back gets at most what it held (the learning mode, until the
// quarantine ends), and neither a newcomer's share nor a single grant
// is granted beside it meanwhile.
func (s *suite) capacityLearning(t *testing.T) {
	if s.h.Lose == nil {
		t.Skip("this store cannot lose its data")
	}
	b, key := s.open(t, "provider:cap")
	a, n := newCapLease(key, 4, 2*time.Second), newCapLease(key, 4, 2*time.Second)
	wantShare(t, "the lease", a.ask(t, b, 3, 0), 3, 3)
	s.h.Lose(t)
	sh := a.ask(t, b, 4, 3)
	wantShare(t, "the lease after the loss", sh, 3, 3)
	if sh.Learning.IsZero() {
		t.Fatalf("the lease after the loss: %+v, want the learning mode", sh)
	}
	wantShare(t, "a newcomer while learning", n.ask(t, b, 4, 0), 0, 0)
	mustAcquire(t, s.h.Open(t), req(key, 4, 1, governor.Fail), governor.Refused)
	s.h.Advance(t, 3*time.Second)
	a.ask(t, b, 2, 2)
	if sh := n.ask(t, b, 4, 0); sh.Share != 2 {
		t.Fatalf("the newcomer after the learning mode: %+v, want 2", sh)
	}
}

// capacityHammer: leases refreshing at random wants and uses, and
// single grants beside them, never hold more than the limit, and the
// shares in force never sum above it.
func (s *suite) capacityHammer(t *testing.T) {
	b, key := s.open(t, "provider:cap")
	const limit = 7
	rng := rand.New(rand.NewPCG(44, 1))
	ls := []*capLease{newCapLease(key, limit, time.Minute), newCapLease(key, limit, time.Minute), newCapLease(key, limit, time.Minute)}
	var singles []string
	for i := range 200 {
		switch k := rng.IntN(5); {
		case k < 3:
			l := ls[k]
			l.ask(t, b, rng.IntN(limit+1), rng.IntN(l.share.Held+1))
		case k == 3:
			r := req(key, limit, 1, governor.Fail)
			if res, err := b.Acquire(ctxT(t), r); err == nil && res.Outcome == governor.Granted {
				singles = append(singles, r.ID)
			}
		case len(singles) > 0:
			release(t, b, key, singles[0])
			singles = singles[1:]
		}
		st := mustStatus(t, b, key)
		sum := len(singles)
		for _, l := range ls {
			sum += l.share.Share
		}
		if st.Used > limit || sum > limit {
			t.Fatalf("step %d: used %d, shares and singles %d, over the limit %d", i, st.Used, sum, limit)
		}
	}
}

// capacityPaused: a paused resource grows no share, a newcomer's
// included; resumed, shares grow again.
func (s *suite) capacityPaused(t *testing.T) {
	b, key := s.open(t, "provider:cap")
	a, n := newCapLease(key, 4, time.Minute), newCapLease(key, 4, time.Minute)
	wantShare(t, "the lease", a.ask(t, b, 2, 0), 2, 2)
	if _, err := b.Admin(ctxT(t), key, governor.Action{Kind: eventkind.Paused, By: "test"}); err != nil {
		t.Fatal(err)
	}
	wantShare(t, "the lease wanting more, paused", a.ask(t, b, 4, 2), 2, 2)
	wantShare(t, "a newcomer, paused", n.ask(t, b, 2, 0), 0, 0)
	if _, err := b.Admin(ctxT(t), key, governor.Action{Kind: eventkind.Resumed, By: "test"}); err != nil {
		t.Fatal(err)
	}
	wantShare(t, "the newcomer, resumed", n.ask(t, b, 2, 0), 2, 2)
	wantUsed(t, b, key, 4)
}

// capacityCrash: the share of a process killed (its backend crashed)
// returns at once where the backend can prove its owner dead (the file
// backend: its lease file unlocked, no declared process alive), counted
// as reclaimed; elsewhere when its lease ends.
func (s *suite) capacityCrash(t *testing.T) {
	b, key := s.open(t, "provider:cap")
	holder := s.h.Open(t)
	a, n := newCapLease(key, 4, 2*time.Second), newCapLease(key, 4, time.Minute)
	wantShare(t, "the lease of the process to be killed", a.ask(t, holder, 4, 4), 4, 4)
	s.crash(t, holder)
	sh := n.ask(t, b, 4, 0)
	switch st := mustStatus(t, b, key); {
	case sh.Share == 4:
		t.Log("returned at once: the owner proven dead")
		if st.Counters.ReclaimedDead != 1 || st.Used != 4 {
			t.Fatalf("the killed process's share returned at once without a reclaim counted: %+v", st)
		}
	case sh.Share == 0:
		if len(st.Holders) != 1 || st.Holders[0].LeaseID != a.r.ID {
			t.Fatalf("the newcomer got nothing, yet the killed process's share is not held: %+v", st.Holders)
		}
		t.Log("no proof of death here: the share returns when its lease ends")
		s.h.Advance(t, 3*time.Second)
		wantShare(t, "the newcomer after the killed process's lease", n.ask(t, b, 4, 0), 4, 4)
	default:
		t.Fatalf("the newcomer beside a killed process's share: %+v", sh)
	}
}

// capacityDeadOwner: a capacity lease declares its owner, a process on
// this host; its backend is killed. While the owner lives its share
// stays held; once the owner is dead, the next refresh of anyone on the
// machine proves it (pid and start time, as a dead holder of a slot is
// proven) and the share returns at once, on every backend, counted as
// reclaimed, and its want goes with it.
func (s *suite) capacityDeadOwner(t *testing.T) {
	decl, kill := ownerProcess(t)
	b, key := s.open(t, "provider:cap")
	holder := s.h.Open(t)
	a, n := newCapLease(key, 4, time.Minute), newCapLease(key, 4, time.Minute)
	a.r.Declaration = decl
	wantShare(t, "the lease of the process to be killed", a.ask(t, holder, 4, 4), 4, 4)
	s.crash(t, holder)
	wantShare(t, "a newcomer while the declared owner lives", n.ask(t, b, 4, 0), 0, 0)
	if st := wantUsed(t, b, key, 4); st.Counters.ReclaimedDead != 0 {
		t.Fatalf("reclaimed while the declared owner lives: %+v", st.Counters)
	}
	kill()
	sh := n.ask(t, b, 4, 0)
	wantShare(t, "the newcomer once the declared owner is dead", sh, 4, 4)
	if sh.Entitled != 4 {
		t.Fatalf("the dead lease's want outlived its reclaim: the newcomer is entitled to %d of 4", sh.Entitled)
	}
	if st := wantUsed(t, b, key, 4); st.Counters.ReclaimedDead != 1 || len(st.Holders) != 1 || st.Holders[0].LeaseID != n.r.ID {
		t.Fatalf("after the reclaim: %+v", st)
	}
}

// capacityReclaimBeforeOwn: a refresh that reclaims a dead owner's
// share listed before its own (granted earlier) updates its own share,
// nothing else's: the file backend found the asker's holder by its
// index before the reclaim and read past the end after it (a panic in
// the soak's Go process, file, seed 1). The asker wants more than it
// holds, so that the Redis backend checks the holders' declarations.
func (s *suite) capacityReclaimBeforeOwn(t *testing.T) {
	decl, kill := ownerProcess(t)
	b, key := s.open(t, "provider:cap")
	holder := s.h.Open(t)
	a, n := newCapLease(key, 4, time.Minute), newCapLease(key, 4, time.Minute)
	a.r.Declaration = decl
	wantShare(t, "the lease of the process to be killed", a.ask(t, holder, 3, 3), 3, 3)
	wantShare(t, "the asker's lease, granted after it", n.ask(t, b, 1, 1), 1, 1)
	s.crash(t, holder)
	kill()
	sh := n.ask(t, b, 3, 1)
	st := mustStatus(t, b, key)
	if sh.Held < 1 || st.Counters.ReclaimedDead != 1 || len(st.Holders) != 1 || st.Holders[0].LeaseID != n.r.ID || st.Holders[0].Weight != sh.Held {
		t.Fatalf("the asker's refresh that reclaimed the dead share before it: %+v; %+v", sh, st)
	}
}

// capacityStatus: the status lists each live capacity lease, by id,
// with what it wanted and had in use at its last refresh and the weight
// its holder has (0 for a lease that holds nothing yet); a lease
// released is gone from it.
func (s *suite) capacityStatus(t *testing.T) {
	b, key := s.open(t, "provider:cap")
	a, n, z := newCapLease(key, 4, time.Minute), newCapLease(key, 4, time.Minute), newCapLease(key, 4, time.Minute)
	wantShare(t, "the first lease", a.ask(t, b, 3, 1), 3, 3)
	wantShare(t, "the second", n.ask(t, b, 2, 0), 1, 1)
	wantShare(t, "the third, with no room", z.ask(t, b, 1, 0), 0, 0)
	want := []capacity.Lease{{ID: a.r.ID, Want: 3, InUse: 1, Held: 3}, {ID: n.r.ID, Want: 2, Held: 1}, {ID: z.r.ID, Want: 1}}
	slices.SortFunc(want, func(x, y capacity.Lease) int { return strings.Compare(x.ID, y.ID) })
	st := wantUsed(t, b, key, 4)
	if len(st.Shares) != len(want) {
		t.Fatalf("shares %+v, want %+v", st.Shares, want)
	}
	for i, l := range st.Shares {
		if !l.Expires.After(st.Now) {
			t.Fatalf("share %s expires %v, before the status's now %v", l.ID, l.Expires, st.Now)
		}
		l.Expires = time.Time{}
		if l != want[i] {
			t.Fatalf("shares %+v, want %+v", st.Shares, want)
		}
	}
	if _, err := n.try(t, b, capacity.Ask{Release: true}); err != nil {
		t.Fatal(err)
	}
	if st := mustStatus(t, b, key); len(st.Shares) != 2 || slices.ContainsFunc(st.Shares, func(l capacity.Lease) bool { return l.ID == n.r.ID }) {
		t.Fatalf("after a release: shares %+v", st.Shares)
	}
}

// capacityLocalGrants: each refresh reports its lease's running count of
// local grants (capacity.Ask's Granted) and the resource's
// Counters.LocalGrants gains what the count kept for the lease lacks
// (capacity.Ask.Tally): a refresh sent twice or late adds nothing, a
// release adds its last grants and a release sent twice nothing more; a
// lease the backend keeps no count of (new, expired, or after a loss of
// the state) adds nothing and starts its count. No other counter moves.
func (s *suite) capacityLocalGrants(t *testing.T) {
	b, key := s.open(t, "provider:cap")
	step := func(what string, l *capLease, a capacity.Ask, counted int64) {
		t.Helper()
		if _, err := l.try(t, b, a); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		c := mustStatus(t, b, key).Counters
		if c.LocalGrants != counted {
			t.Fatalf("%s: %d local grants counted, want %d", what, c.LocalGrants, counted)
		}
		other := c
		other.Acquired, other.Released, other.ReclaimedExpiry, other.LocalGrants = 0, 0, 0, 0
		if other != (governor.Counters{}) || c.Acquired > 4 || c.Released > 1 {
			t.Fatalf("%s: counters %+v, want only the shares' grants, a release, an expiry and the local grants", what, c)
		}
	}
	a, n, e := newCapLease(key, 6, time.Minute), newCapLease(key, 6, time.Minute), newCapLease(key, 6, 2*time.Second)
	step("the first refresh", a, capacity.Ask{Want: 2}, 0)
	step("five grants", a, capacity.Ask{Want: 2, InUse: 1, Granted: 5}, 5)
	step("the same refresh again (its answer lost)", a, capacity.Ask{Want: 2, InUse: 1, Granted: 5}, 5)
	step("three more", a, capacity.Ask{Want: 2, Granted: 8}, 8)
	step("an older refresh, late", a, capacity.Ask{Want: 2, InUse: 1, Granted: 6}, 8)
	step("a new lease reporting grants the backend has no count of", n, capacity.Ask{Want: 2, Granted: 7}, 8)
	step("its next refresh", n, capacity.Ask{Want: 2, Granted: 9}, 10)
	step("the release, with two more", a, capacity.Ask{Release: true, Granted: 10}, 12)
	step("the release again", a, capacity.Ask{Release: true, Granted: 10}, 12)
	step("a short lease", e, capacity.Ask{Want: 1, Granted: 1}, 12)
	step("its next refresh", e, capacity.Ask{Want: 1, Granted: 4}, 15)
	s.h.Advance(t, 3*time.Second)
	step("its refresh after its lease expired", e, capacity.Ask{Want: 1, Granted: 6}, 15)
	step("its next refresh", e, capacity.Ask{Want: 1, Granted: 7}, 16)
	if s.h.Lose == nil {
		return
	}
	s.h.Lose(t)
	if _, err := n.try(t, b, capacity.Ask{Want: 2, Granted: 15}); err != nil {
		t.Fatal(err)
	}
	if c := mustStatus(t, b, key).Counters; c.LocalGrants != 0 {
		t.Fatalf("after the loss of the state, the lease's grants made before it were counted again: %+v", c)
	}
}

// capacityNotForgotten: a live capacity lease, even one that wants and
// holds nothing, leases its resource: Forget keeps the resource and the
// lease's count of local grants (the differential found the file
// backend forgetting the lease while Redis kept its want). Released, the
// resource is idle, and is forgotten as any idle one, its leases' wants
// and counts with it.
func (s *suite) capacityNotForgotten(t *testing.T) {
	const retention = time.Second
	b, key := s.open(t, "provider:cap")
	l := newCapLease(key, 4, time.Minute)
	if _, err := l.try(t, b, capacity.Ask{Granted: 5}); err != nil {
		t.Fatal(err)
	}
	forget := func(want bool, when string) {
		t.Helper()
		if got, err := b.Forget(ctxT(t), key, retention); err != nil || got != want {
			t.Fatalf("Forget %s: %v, %v; want %v", when, got, err, want)
		}
	}
	forget(false, "a lease wanting nothing, first seen")
	s.h.Advance(t, retention+100*time.Millisecond)
	forget(false, "a lease wanting nothing, past the retention")
	if _, err := l.try(t, b, capacity.Ask{Granted: 7}); err != nil {
		t.Fatal(err)
	}
	if st := mustStatus(t, b, key); len(st.Shares) != 1 || st.Counters.LocalGrants != 2 {
		t.Fatalf("after Forget kept it: leases %+v, local grants %d; want the lease, and 2 grants (7 reported after 5)",
			st.Shares, st.Counters.LocalGrants)
	}
	if _, err := l.try(t, b, capacity.Ask{Release: true, Granted: 7}); err != nil {
		t.Fatal(err)
	}
	forget(false, "released, first seen")
	s.h.Advance(t, retention+100*time.Millisecond)
	forget(true, "released, past the retention")
	if st := mustStatus(t, b, key); len(st.Shares) != 0 || st.Counters.LocalGrants != 0 {
		t.Fatalf("forgotten: leases %+v, local grants %d; want none", st.Shares, st.Counters.LocalGrants)
	}
	// The lease asking again is a new lease: its grants made before are
	// not counted (its count went with the state).
	if _, err := l.try(t, b, capacity.Ask{Granted: 9}); err != nil {
		t.Fatal(err)
	}
	if st := mustStatus(t, b, key); st.Counters.LocalGrants != 0 {
		t.Fatalf("the lease's refresh after its resource was forgotten counted %d local grants; want 0 (a new lease's count)",
			st.Counters.LocalGrants)
	}
}
