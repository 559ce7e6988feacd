package conformance

import (
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/capacity"
)

// rateShareStatus: RateStatus shows each live rate share (what it
// wants, holds and granted locally, its expiry) by ID, the key's
// learning mode, and counts the local grants the refreshes report as
// Counters.LocalGrants does a capacity lease's (capacity.Ask.Tally):
// each grant once, whatever refresh repeats or comes late.
func (s *suite) rateShareStatus(t *testing.T) {
	b := s.openFull(t)
	key := governor.Key{Project: project(), Resource: "provider:rstatus"}
	l := governor.RateLimit{Rate: 600, Period: time.Minute, Burst: 300}
	status := func(what string, grants int64, shares ...capacity.RateHolder) governor.RateStatus {
		t.Helper()
		rs, err := b.RateStatus(ctxT(t), key)
		if err != nil {
			t.Fatal(err)
		}
		if rs.LocalGrants != grants || len(rs.Shares) != len(shares) {
			t.Fatalf("%s: %d local grants and shares %+v; want %d and %+v", what, rs.LocalGrants, rs.Shares, grants, shares)
		}
		for i, w := range shares {
			got := rs.Shares[i]
			if left := got.Expires.Sub(rs.Now); left <= 0 || left > time.Minute {
				t.Fatalf("%s: share %s expires in %v, want within its lease of a minute", what, got.ID, left)
			}
			got.Expires = time.Time{}
			if got != w {
				t.Fatalf("%s: share %d is %+v, want %+v", what, i, got, w)
			}
		}
		return rs
	}
	step := func(what string, x *rateLease, want, granted int64, release bool, grants int64, shares ...capacity.RateHolder) {
		t.Helper()
		x.a.Granted = granted
		if _, err := x.try(t, b, want, release); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		status(what, grants, shares...)
	}
	if rs := status("no share yet", 0); !rs.Learning.IsZero() {
		t.Fatalf("no share yet: learning until %v", rs.Learning)
	}
	x, y := newRateLease(key, l, time.Minute), newRateLease(key, l, time.Minute)
	hx := func(want, rate, granted int64) capacity.RateHolder {
		return capacity.RateHolder{ID: x.a.ID, Want: want, Rate: rate, Burst: capacity.BurstOf(rate, l.Rate, l.Burst), Granted: granted}
	}
	hy := func(want, rate, granted int64) capacity.RateHolder {
		return capacity.RateHolder{ID: y.a.ID, Want: want, Rate: rate, Burst: capacity.BurstOf(rate, l.Rate, l.Burst), Granted: granted}
	}
	step("the first share", x, 600, 0, false, 0, hx(600, 600, 0))
	step("a newcomer reporting grants the backend has no count of", y, 400, 7, false, 0, hx(600, 600, 0), hy(400, 0, 7))
	step("five grants", x, 500, 5, false, 5, hx(500, 300, 5), hy(400, 0, 7))
	step("the same refresh again (its answer lost)", x, 500, 5, false, 5, hx(500, 300, 5), hy(400, 0, 7))
	step("an older refresh, late", x, 500, 3, false, 5, hx(500, 300, 5), hy(400, 0, 7))
	step("the newcomer's next refresh", y, 400, 9, false, 7, hx(500, 300, 5), hy(400, 300, 9))
	step("the release, with four more", x, 0, 9, true, 11, hy(400, 300, 9))
	step("the release again", x, 0, 12, true, 11, hy(400, 300, 9))
	if s.h.Lose == nil {
		return
	}
	s.h.Lose(t)
	s.h.Advance(t, time.Millisecond) // a state born later (a store's clock may stand still)
	y.a.Granted = 20
	y.ask(t, b, 400)
	rs := status("after a loss of the state", 0, hy(400, 300, 20))
	if left := rs.Learning.Sub(rs.Now); left <= 0 || left > time.Minute {
		t.Fatalf("after a loss of the state: learning for %v, want up to the lease's minute", left)
	}
}

// rateShareTokenStatus: RateStatus lists the shares of a key's tokens
// limit apart from its requests' (TokenShares, their rates in tokens),
// and counts the tokens their refreshes report taken (TokenLocalGrants),
// each once, apart from the requests granted.
func (s *suite) rateShareTokenStatus(t *testing.T) {
	b := s.openFull(t)
	key := governor.Key{Project: project(), Resource: "provider:rtstatus"}
	rq, tk := governor.RateLimit{Rate: 600, Period: time.Minute}, governor.RateLimit{Rate: 60000, Period: time.Minute, Burst: 30000}
	r, x := newRateLease(key, rq, time.Minute), newRateLease(key, tk, time.Minute)
	x.a.Tokens = true
	for _, g := range []int64{0, 3} {
		r.a.Granted = g
		r.ask(t, b, 600)
	}
	for _, g := range []int64{0, 900, 1500, 1500} {
		x.a.Granted = g
		x.ask(t, b, 60000)
	}
	rs, err := b.RateStatus(ctxT(t), key)
	if err != nil {
		t.Fatal(err)
	}
	if rs.LocalGrants != 3 || len(rs.Shares) != 1 || rs.Shares[0].ID != r.a.ID {
		t.Fatalf("the requests' shares: %d local grants, %+v; want 3 and the one share %s", rs.LocalGrants, rs.Shares, r.a.ID)
	}
	want := capacity.RateHolder{ID: x.a.ID, Want: 60000, Rate: 60000, Burst: 30000, Granted: 1500}
	if rs.TokenLocalGrants != 1500 || len(rs.TokenShares) != 1 {
		t.Fatalf("the tokens' shares: %d tokens taken locally, %+v; want 1500 and %+v", rs.TokenLocalGrants, rs.TokenShares, want)
	}
	got := rs.TokenShares[0]
	if left := got.Expires.Sub(rs.Now); left <= 0 || left > time.Minute {
		t.Fatalf("the tokens' share expires in %v, want within its lease of a minute", left)
	}
	if got.Expires = (time.Time{}); got != want {
		t.Fatalf("the tokens' share is %+v, want %+v", got, want)
	}
}
