package conformance

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/capacity"
	"github.com/governor-dev/governor/governor/eventkind"
)

// Rate shares (issue 44, capacity.RateAsk): a share of a rate limit's
// requests or tokens, kept beside its central limiter, on every backend.

// rateLease is one rate share of the tests and the last answer it got.
type rateLease struct {
	key   governor.Key
	limit governor.RateLimit
	a     capacity.RateAsk
	decl  governor.Declaration
	share capacity.RateShare
}

// rateLeases numbers the rate leases of every test, which run in
// parallel.
var rateLeases atomic.Int64

func newRateLease(key governor.Key, limit governor.RateLimit, ttl time.Duration) *rateLease {
	id := fmt.Sprintf("rs%03d", rateLeases.Add(1))
	return &rateLease{key: key, limit: limit, a: capacity.RateAsk{ID: id, Secret: id + "-secret", TTL: ttl}}
}

// try refreshes l wanting want (Held and Token from its last answer).
func (l *rateLease) try(t *testing.T, b governor.RateBackend, want int64, release bool) (capacity.RateShare, error) {
	t.Helper()
	a := l.a
	a.Want, a.Held, a.Token, a.Release = want, l.share.Rate, l.share.Token, release
	req := governor.RateRequest{Key: l.key, Requests: l.limit, Share: &a, Declaration: l.decl}
	if a.Tokens {
		req.Requests, req.Tokens = governor.RateLimit{}, l.limit
	}
	res, err := b.RateReserve(ctxT(t), req)
	if err != nil {
		return capacity.RateShare{}, err
	}
	if !res.Allowed || res.Share == nil {
		t.Fatalf("rate share %s: %+v, want allowed with a share", a.ID, res)
	}
	if !release && res.Share.Expires.Before(time.Now().Add(-time.Minute)) {
		t.Fatalf("rate share %s: expiry %v", a.ID, res.Share.Expires)
	}
	l.share = *res.Share
	return l.share, nil
}

// ask is try, failing t on an error.
func (l *rateLease) ask(t *testing.T, b governor.RateBackend, want int64) capacity.RateShare {
	t.Helper()
	sh, err := l.try(t, b, want, false)
	if err != nil {
		t.Fatalf("rate share %s want %d: %v", l.a.ID, want, err)
	}
	return sh
}

// wantRate fails t unless sh has rate (and its burst, the limit's part).
func wantRate(t *testing.T, what string, sh capacity.RateShare, l governor.RateLimit, rate int64) {
	t.Helper()
	if sh.Rate != rate || sh.Burst != capacity.BurstOf(rate, l.Rate, l.Burst) {
		t.Fatalf("%s: %+v, want rate %d burst %d", what, sh, rate, capacity.BurstOf(rate, l.Rate, l.Burst))
	}
}

// central reserves n requests one at a time on the central path and
// returns how many were allowed.
func central(t *testing.T, b governor.RateBackend, key governor.Key, l governor.RateLimit, n int) int {
	t.Helper()
	got := 0
	for range n {
		res, err := b.RateReserve(ctxT(t), governor.RateRequest{Key: key, Requests: l, NRequests: 1})
		if err != nil {
			t.Fatal(err)
		}
		if res.Allowed {
			got++
		} else if res.RetryAfter <= 0 {
			t.Fatalf("a denial with retry %v", res.RetryAfter)
		}
	}
	return got
}

// rateShareFairShare: shares follow max-min fair share of the limit and
// never sum above it: a newcomer at saturation is entitled at once, the
// holder shrinks at its next refresh (told others wait), and the
// newcomer's next refresh takes the room.
func (s *suite) rateShareFairShare(t *testing.T) {
	b := s.openFull(t)
	key := governor.Key{Project: project(), Resource: "provider:rshare"}
	l := governor.RateLimit{Rate: 600, Period: time.Minute, Burst: 300}
	x, y := newRateLease(key, l, time.Minute), newRateLease(key, l, time.Minute)
	wantRate(t, "the first share", x.ask(t, b, 600), l, 600)
	sh := y.ask(t, b, 600)
	if sh.Rate != 0 || sh.Entitled != 300 {
		t.Fatalf("a newcomer at saturation: %+v, want rate 0 entitled 300", sh)
	}
	sh = x.ask(t, b, 600)
	wantRate(t, "the holder after the newcomer", sh, l, 300)
	if !sh.Waiting {
		t.Fatalf("the holder after the newcomer: %+v, want others waiting", sh)
	}
	wantRate(t, "the newcomer's next refresh", y.ask(t, b, 600), l, 300)
	wantRate(t, "a small want", x.ask(t, b, 100), l, 100)
	wantRate(t, "the rest", y.ask(t, b, 600), l, 500)
}

// rateShareCentral: a reservation without a share is held to what the
// shares leave (rate and burst), is denied when they hold it all, and
// then counts as waiting: the shares' next refreshes leave it its fair
// share.
func (s *suite) rateShareCentral(t *testing.T) {
	b := s.openFull(t)
	key := governor.Key{Project: project(), Resource: "provider:rcentral"}
	l := governor.RateLimit{Rate: 600, Period: time.Hour}
	x := newRateLease(key, l, time.Minute)
	wantRate(t, "the share", x.ask(t, b, 400), l, 400)
	if got := central(t, b, key, l, 250); got != 200 {
		t.Fatalf("the central path beside a share of 400 of 600: %d allowed, want 200 (the burst left)", got)
	}
	wantRate(t, "the whole limit", x.ask(t, b, 600), l, 600)
	if got := central(t, b, key, l, 1); got != 0 {
		t.Fatalf("the central path beside a share of it all: %d allowed, want 0", got)
	}
	sh := x.ask(t, b, 600)
	wantRate(t, "the share after the central path waited", sh, l, 300)
	if !sh.Waiting {
		t.Fatalf("the share after the central path waited: %+v, want others waiting", sh)
	}
}

// rateShareGiveBack: a want of 0 gives the share back at once, a
// release ends the lease; a lease not refreshed expires with its share.
func (s *suite) rateShareGiveBack(t *testing.T) {
	b := s.openFull(t)
	key := governor.Key{Project: project(), Resource: "provider:rback"}
	l := governor.RateLimit{Rate: 600, Period: time.Minute}
	x, y, z := newRateLease(key, l, time.Minute), newRateLease(key, l, time.Minute), newRateLease(key, l, time.Second)
	x.ask(t, b, 600)
	wantRate(t, "given back", x.ask(t, b, 0), l, 0)
	wantRate(t, "the newcomer", y.ask(t, b, 600), l, 600)
	if _, err := y.try(t, b, 0, true); err != nil {
		t.Fatal(err)
	}
	wantRate(t, "a share of a short lease", z.ask(t, b, 600), l, 600)
	s.h.Advance(t, 1500*time.Millisecond)
	wantRate(t, "after the short lease expired", x.ask(t, b, 600), l, 600)
}

// rateShareRefused: bad input is ErrInvalid, another's secret
// ErrNotOwner, and neither changes the share.
func (s *suite) rateShareRefused(t *testing.T) {
	b := s.openFull(t)
	key := governor.Key{Project: project(), Resource: "provider:rrefused"}
	l := governor.RateLimit{Rate: 600, Period: time.Minute}
	x := newRateLease(key, l, time.Minute)
	x.ask(t, b, 100)
	for _, bad := range []func(*rateLease){
		func(r *rateLease) { r.limit.Rate = 0 },
		func(r *rateLease) { r.a.TTL = time.Millisecond },
		func(r *rateLease) { r.a.Secret = "" },
		func(r *rateLease) { r.limit.Period = 0 },
	} {
		y := *x
		bad(&y)
		if _, err := y.try(t, b, 100, false); !errors.Is(err, governor.ErrInvalid) {
			t.Fatalf("bad rate share %+v: %v, want ErrInvalid", y.a, err)
		}
	}
	if _, err := x.try(t, b, 700, false); !errors.Is(err, governor.ErrInvalid) {
		t.Fatalf("a want above the limit: %v, want ErrInvalid", err)
	}
	y := *x
	y.a.Secret = "another"
	if _, err := y.try(t, b, 600, false); !errors.Is(err, governor.ErrNotOwner) {
		t.Fatalf("another's secret: %v, want ErrNotOwner", err)
	}
	if _, err := y.try(t, b, 0, true); !errors.Is(err, governor.ErrNotOwner) {
		t.Fatalf("a release with another's secret: %v, want ErrNotOwner", err)
	}
	wantRate(t, "the share after the refusals", x.ask(t, b, 100), l, 100)
}

// rateShareLearning: after the store lost its data, a share that comes
// back gets at most what it held (the learning mode, one lease long), a
// newcomer nothing and the central path is denied meanwhile.
func (s *suite) rateShareLearning(t *testing.T) {
	if s.h.Lose == nil {
		t.Skip("this store cannot lose its data")
	}
	b := s.openFull(t)
	key := governor.Key{Project: project(), Resource: "provider:rlearn"}
	l := governor.RateLimit{Rate: 600, Period: time.Minute}
	x, n := newRateLease(key, l, time.Second), newRateLease(key, l, time.Second)
	x.ask(t, b, 300)
	s.h.Lose(t)
	s.h.Advance(t, time.Millisecond) // a state born later (a store's clock may stand still)
	sh := x.ask(t, b, 600)
	wantRate(t, "the share after the loss", sh, l, 300)
	if sh.Learning.IsZero() {
		t.Fatalf("the share after the loss: %+v, want the learning mode", sh)
	}
	wantRate(t, "a newcomer while learning", n.ask(t, b, 600), l, 0)
	if got := central(t, b, key, l, 1); got != 0 {
		t.Fatalf("the central path while learning: %d allowed, want 0", got)
	}
	s.h.Advance(t, 1500*time.Millisecond)
	x.ask(t, b, 300)
	if sh := n.ask(t, b, 600); sh.Rate != 300 || !sh.Learning.IsZero() {
		t.Fatalf("the newcomer after the learning mode: %+v, want 300", sh)
	}
}

// rateShareLearningNewProcess: after the store lost its data, a new
// process of the machine whose process holds a rate share, first to
// arrive, gets nothing beside that share (which its holder still grants
// from on its own clock): the machine witnessed the shares' state, so
// its new lease is evidence of the loss and the key learns.
func (s *suite) rateShareLearningNewProcess(t *testing.T) {
	if s.h.Lose == nil {
		t.Skip("this store cannot lose its data")
	}
	b := s.openFull(t)
	key := governor.Key{Project: project(), Resource: "provider:rlearnnew"}
	l := governor.RateLimit{Rate: 600, Period: time.Minute}
	x := newRateLease(key, l, time.Minute)
	wantRate(t, "the share before the loss", x.ask(t, b, 600), l, 600)
	s.h.Lose(t)
	s.h.Advance(t, time.Millisecond) // a state born later (a store's clock may stand still)
	sh := newRateLease(key, l, time.Minute).ask(t, asFull(t, s.h.Open(t)), 600)
	if sh.Rate != 0 || sh.Learning.IsZero() {
		t.Fatalf("a new process's rate share after the loss: %+v, want none, the key learning", sh)
	}
}

// rateShareCoolOff: while the provider cools off, a refresh shrinks its
// share to 0 (entitled still); after the cool-off it grows again.
func (s *suite) rateShareCoolOff(t *testing.T) {
	b := s.openFull(t)
	key := governor.Key{Project: project(), Resource: "provider:rcool"}
	l := governor.RateLimit{Rate: 600, Period: time.Minute}
	x := newRateLease(key, l, time.Minute)
	wantRate(t, "before the cool-off", x.ask(t, b, 600), l, 600)
	d := s.coolOffLength()
	if _, err := b.Admin(ctxT(t), key, governor.Action{Kind: eventkind.CoolOff, For: d, Detail: "HTTP 429 from test"}); err != nil {
		t.Fatal(err)
	}
	if sh := x.ask(t, b, 600); sh.Rate != 0 || sh.Entitled != 600 {
		t.Fatalf("while cooling off: %+v, want rate 0 entitled 600", sh)
	}
	s.h.Advance(t, d+time.Millisecond)
	wantRate(t, "after the cool-off", x.ask(t, b, 600), l, 600)
}

// rateShareDeadOwner: the share of a process proven dead on this
// machine (its declared pid and start time) returns at the next refresh
// that gets less than its part, its want gone with it; while the
// process lives, its share stays until its lease ends.
func (s *suite) rateShareDeadOwner(t *testing.T) {
	decl, kill := ownerProcess(t)
	b := s.openFull(t)
	holder := asFull(t, s.h.Open(t))
	key := governor.Key{Project: project(), Resource: "provider:rdead"}
	l := governor.RateLimit{Rate: 600, Period: time.Minute}
	x, y := newRateLease(key, l, time.Minute), newRateLease(key, l, time.Minute)
	x.decl = decl
	wantRate(t, "the share of the process to be killed", x.ask(t, holder, 600), l, 600)
	s.crash(t, holder)
	wantRate(t, "a newcomer while the declared owner lives", y.ask(t, b, 600), l, 0)
	kill()
	sh := y.ask(t, b, 600)
	wantRate(t, "the newcomer once the declared owner is dead", sh, l, 600)
	if sh.Entitled != 600 {
		t.Fatalf("the dead share's want outlived its reclaim: the newcomer is entitled to %d of 600", sh.Entitled)
	}
}

// rateShareTokens: a share of the tokens limit (RateAsk.Tokens) is apart
// from those of the requests; the central path's tokens are held to what
// the tokens' shares leave, a denial for its tokens makes them wait (not
// the requests' shares), and its settle (RateAdjust) is charged at the
// rate they leave.
func (s *suite) rateShareTokens(t *testing.T) {
	b := s.openFull(t)
	key := governor.Key{Project: project(), Resource: "provider:rtokens"}
	rq, tk := governor.RateLimit{Rate: 10, Period: time.Hour}, governor.RateLimit{Rate: 600, Period: time.Hour}
	r, x := newRateLease(key, rq, time.Minute), newRateLease(key, tk, time.Minute)
	x.a.Tokens = true
	wantRate(t, "the requests' share", r.ask(t, b, 4), rq, 4)
	wantRate(t, "the tokens' share", x.ask(t, b, 400), tk, 400)
	reserve := func(n int64) bool {
		t.Helper()
		res, err := b.RateReserve(ctxT(t), governor.RateRequest{Key: key, Requests: rq, Tokens: tk, NRequests: 1, NTokens: n})
		if err != nil {
			t.Fatal(err)
		}
		return res.Allowed
	}
	if !reserve(100) {
		t.Fatal("100 tokens beside a share of 400 of 600: denied")
	}
	if err := b.RateAdjust(ctxT(t), governor.RateAdjustment{Key: key, Tokens: tk, Delta: 100}); err != nil {
		t.Fatal(err)
	}
	if reserve(1) {
		t.Fatal("a token after 200 used of the 200 the share leaves: allowed (the settle charged at the limit's rate?)")
	}
	wantRate(t, "the whole tokens limit", x.ask(t, b, 600), tk, 600)
	if reserve(1) {
		t.Fatal("a token beside a share of all the tokens: allowed")
	}
	sh := x.ask(t, b, 600)
	wantRate(t, "the tokens' share after the central path waited", sh, tk, 300)
	if !sh.Waiting {
		t.Fatalf("the tokens' share after the central path waited: %+v, want others waiting", sh)
	}
	if sh := r.ask(t, b, 4); sh.Rate != 4 || sh.Waiting {
		t.Fatalf("the requests' share after a denial for tokens: %+v, want 4, none waiting", sh)
	}
	y := *x
	y.limit.Rate = 0
	if _, err := y.try(t, b, 100, false); !errors.Is(err, governor.ErrInvalid) || !strings.Contains(err.Error(), "tokens") {
		t.Fatalf("a tokens' share of no tokens limit: %v, want ErrInvalid naming the tokens", err)
	}
}
