package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/eventkind"
)

// adaptiveAIMD: a signal halves the limit in force (not below the
// minimum), a run of successes adds one (not above the maximum), a
// process asking for the maximum is no drift, a raised limit hands room
// to the queue at once, and another maximum starts over from it.
func (s *suite) adaptiveAIMD(t *testing.T) {
	b := s.openFull(t)
	key := governor.Key{Project: project(), Resource: "provider:aimd"}
	step := func(signal bool, want int) {
		t.Helper()
		a, err := b.Adapt(ctxT(t), key, governor.AdaptRequest{Max: 8, Min: 1, IncreaseEvery: 3, Signal: signal})
		if err != nil || a.Limit != want || a.Max != 8 {
			t.Fatalf("Adapt(signal %v) = %+v, %v; want limit %d of 8", signal, a, err, want)
		}
	}
	mustAcquire(t, b, req(key, 8, 1, governor.Fail), governor.Granted)
	step(true, 4)
	if st := mustStatus(t, b, key); st.Limit != 4 || st.Adaptive == nil || st.Adaptive.Limit != 4 || st.Adaptive.Max != 8 || st.DriftLimit != 0 {
		t.Fatalf("after a signal: status limit %d, adaptive %+v, drift %d; want 4 of 8, no drift", st.Limit, st.Adaptive, st.DriftLimit)
	}
	for i := 0; i < 3; i++ { // processes asking for the maximum
		mustAcquire(t, b, req(key, 8, 1, governor.Fail), governor.Granted)
	}
	mustAcquire(t, b, req(key, 8, 1, governor.Fail), governor.Refused)
	if st := mustStatus(t, b, key); st.Used != 4 || st.DriftLimit != 0 {
		t.Fatalf("under the adaptive limit 4: used %d, drift %d", st.Used, st.DriftLimit)
	}
	step(true, 2)
	step(true, 1)
	step(true, 1) // the minimum
	// Free everything but one holder, queue a waiter: the limit 1 is full.
	st := mustStatus(t, b, key)
	for _, h := range st.Holders[1:] {
		release(t, b, key, h.LeaseID)
	}
	w := req(key, 8, 1, governor.Wait)
	mustAcquire(t, b, w, governor.Queued)
	step(false, 1)
	step(false, 1)
	step(false, 2) // the third success in a row: one more, handed on at once
	w.New = false
	mustAcquire(t, b, w, governor.Granted)
	for i, want := 0, 2; want < 8; i++ {
		if i%3 == 2 {
			want++
		}
		step(false, want)
	}
	step(false, 8) // never above the maximum
	if st := mustStatus(t, b, key); st.Limit != 8 {
		t.Fatalf("back at the maximum: limit %d", st.Limit)
	}
	if a, err := b.Adapt(ctxT(t), key, governor.AdaptRequest{Max: 10, Min: 2, IncreaseEvery: 3, Signal: true}); err != nil || a.Limit != 5 || a.Max != 10 {
		t.Fatalf("another maximum: %+v, %v; want a start over from 10, halved to 5", a, err)
	}
	evs, err := b.Events(ctxT(t), key, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.Kind == eventkind.Drift {
			t.Fatalf("a drift event under an adaptive limit: %+v", e)
		}
	}
}

// adaptiveProvider: Provider.Do halves the fleet's limit on a
// RateLimited and counts its successes; the last signal is shown.
func (s *suite) adaptiveProvider(t *testing.T) {
	g := newGovernor(t, s.openFull(t), governor.Options{Project: project()})
	p := g.Provider("aimd", governor.ProviderLimits{MaxConcurrency: 4, Adaptive: &governor.Adaptive{Min: 1, IncreaseEvery: 2}})
	res := governor.ProviderResource("aimd")
	call := func(err error) {
		t.Helper()
		if got := p.Do(ctxT(t), 0, func(context.Context) (int64, error) { return 0, err }); (got == nil) != (err == nil) {
			t.Fatalf("Do: %v", got)
		}
	}
	call(nil)
	call(governor.RateLimited{RetryAfter: time.Millisecond})
	st, err := g.Status(ctxT(t), res)
	if err != nil || st.Adaptive == nil || st.Adaptive.Limit != 2 || st.LastSignal.IsZero() {
		t.Fatalf("after a signal: %+v, %v; want the adaptive limit 2 of 4 and the last signal", st.Adaptive, err)
	}
	s.h.Advance(t, 10*time.Millisecond) // past the cool-off
	call(nil)
	call(nil)
	if st, err := g.Status(ctxT(t), res); err != nil || st.Adaptive.Limit != 3 || st.Limit != 3 {
		t.Fatalf("after two successes: %+v limit %d, %v; want 3", st.Adaptive, st.Limit, err)
	}
	if err := g.Provider("aimd", governor.ProviderLimits{MaxConcurrency: 4, Adaptive: &governor.Adaptive{Min: 5}}).Do(ctxT(t), 0,
		func(context.Context) (int64, error) { return 0, nil }); err == nil {
		t.Fatal("adaptive min 5 above max concurrency 4 accepted")
	}
}

// learnedBudget: a budget a response reported is the stricter limit
// until its reset — requests and tokens counted down by every
// reservation, a cost it does not cover denied until the reset — and the
// configured limit still applies where it is stricter.
func (s *suite) learnedBudget(t *testing.T) {
	b := s.openFull(t)
	key := governor.Key{Project: project(), Resource: "provider:learned"}
	reset := 10 * time.Second
	if s.h.RealTime {
		reset = 1500 * time.Millisecond
	}
	if err := b.RateAdjust(ctxT(t), governor.RateAdjustment{Key: key, Learned: &[]governor.LearnedBudget{governor.LearnedBudget{RemainingRequests: 2, ResetRequests: reset,
		RemainingTokens: 500, ResetTokens: reset}}[0]}); err != nil {
		t.Fatal(err)
	}
	r := governor.RateRequest{Key: key, Requests: governor.RateLimit{Rate: 1000, Period: time.Minute}, NRequests: 1, NTokens: 200}
	for i := int64(0); i < 2; i++ {
		res, err := b.RateReserve(ctxT(t), r)
		if err != nil || !res.Allowed || res.RemainingRequests != 1-i {
			t.Fatalf("reservation %d within the learned budget: %+v, %v; want allowed, %d requests left", i, res, err, 1-i)
		}
	}
	res, err := b.RateReserve(ctxT(t), r)
	if err != nil || res.Allowed || res.RetryAfter <= 0 || res.RetryAfter > reset {
		t.Fatalf("beyond the learned requests: %+v, %v; want denied until the reset (at most %v)", res, err, reset)
	}
	s.h.Advance(t, reset+10*time.Millisecond)
	for i := 0; i < 3; i++ { // the reset passed: the configured limit alone
		if res, err := b.RateReserve(ctxT(t), r); err != nil || !res.Allowed {
			t.Fatalf("after the reset, reservation %d: %+v, %v", i, res, err)
		}
	}
	// Tokens: 500 reported, 200 a call; the configured limit is looser.
	if err := b.RateAdjust(ctxT(t), governor.RateAdjustment{Key: key, Learned: &[]governor.LearnedBudget{governor.LearnedBudget{RemainingRequests: -1, RemainingTokens: 500, ResetTokens: reset}}[0]}); err != nil {
		t.Fatal(err)
	}
	r.Tokens = governor.RateLimit{Rate: 100000, Period: time.Minute}
	for i := 0; i < 2; i++ {
		if res, err := b.RateReserve(ctxT(t), r); err != nil || !res.Allowed {
			t.Fatalf("tokens within the learned budget, %d: %+v, %v", i, res, err)
		}
	}
	if res, err := b.RateReserve(ctxT(t), r); err != nil || res.Allowed {
		t.Fatalf("200 tokens with 100 learned left: %+v, %v; want denied", res, err)
	}
	// A configured limit stricter than the learned budget still decides.
	strict := governor.RateRequest{Key: governor.Key{Project: key.Project, Resource: "provider:strict"},
		Requests: governor.RateLimit{Rate: 1, Period: time.Minute}, NRequests: 1}
	if err := b.RateAdjust(ctxT(t), governor.RateAdjustment{Key: strict.Key, Learned: &[]governor.LearnedBudget{governor.LearnedBudget{RemainingRequests: 50, ResetRequests: reset, RemainingTokens: -1}}[0]}); err != nil {
		t.Fatal(err)
	}
	if res, err := b.RateReserve(ctxT(t), strict); err != nil || !res.Allowed || res.RemainingRequests != 0 {
		t.Fatalf("first under the stricter configured limit: %+v, %v", res, err)
	}
	if res, err := b.RateReserve(ctxT(t), strict); err != nil || res.Allowed {
		t.Fatalf("second under 1/min with 49 learned: %+v, %v; want denied by the configured limit", res, err)
	}
}

// shadowRates: a shadow reservation is never denied, and is marked and
// counted exactly where the same limits, enforced, deny the same
// sequence of reservations on another key.
func (s *suite) shadowRates(t *testing.T) {
	rb := s.openFull(t)
	p := project()
	real := governor.RateRequest{Key: governor.Key{Project: p, Resource: "provider:real"},
		Requests: governor.RateLimit{Rate: 60, Period: time.Minute, Burst: 3},
		Tokens:   governor.RateLimit{Rate: 6000, Period: time.Minute, Burst: 500}, NRequests: 1}
	shadow := real
	shadow.Key.Resource, shadow.Shadow = "provider:shadow", true
	var denied, shadowDenied int64
	for i := 0; i < 12; i++ {
		real.NTokens = int64(50 + 40*(i%3))
		shadow.NTokens = real.NTokens
		r, err := rb.RateReserve(ctxT(t), real)
		if err != nil {
			t.Fatal(err)
		}
		sh, err := rb.RateReserve(ctxT(t), shadow)
		if err != nil {
			t.Fatal(err)
		}
		if !sh.Allowed || sh.ShadowDenied != !r.Allowed {
			t.Fatalf("reservation %d: enforced %+v, shadow %+v; want the shadow allowed, marked denied exactly when the enforced one is", i, r, sh)
		}
		if !r.Allowed {
			denied++
		}
		if sh.ShadowDenied {
			shadowDenied++
		}
		if i%4 == 3 && !s.h.RealTime {
			s.h.Advance(t, 1500*time.Millisecond)
		}
	}
	if denied == 0 || denied == 12 {
		t.Fatalf("%d of 12 denied: the sequence tests nothing", denied)
	}
	rs, err := rb.RateStatus(ctxT(t), real.Key)
	if err != nil || rs.Limited != denied || rs.ShadowDenied != 0 {
		t.Fatalf("enforced key status %+v, %v; want %d limited", rs, err, denied)
	}
	ss, err := rb.RateStatus(ctxT(t), shadow.Key)
	if err != nil || ss.ShadowDenied != shadowDenied || ss.Limited != 0 || ss.Allowed != 12-shadowDenied {
		t.Fatalf("shadow key status %+v, %v; want %d shadow denied, none limited", ss, err, shadowDenied)
	}
	// Provider.Do with a shadow limit never waits for it: on a store
	// whose clock stands still, an enforced one would wait forever.
	g := newGovernor(t, s.openFull(t), governor.Options{Project: p})
	sp := g.Provider("shadowdo", governor.ProviderLimits{Requests: governor.RateLimit{Rate: 1, Period: time.Hour}, Shadow: true})
	for i := 0; i < 3; i++ {
		if err := sp.Do(ctxT(t), 0, func(context.Context) (int64, error) { return 0, nil }); err != nil {
			t.Fatal(err)
		}
	}
	if st, err := g.RateStatus(ctxT(t), governor.ProviderResource("shadowdo")); err != nil || st.ShadowDenied != 2 || st.Allowed != 1 {
		t.Fatalf("shadow provider after 3 calls at 1/h: %+v, %v; want 1 allowed, 2 shadow denied", st, err)
	}
	// A cost above the burst: enforced, an error; in shadow, allowed and
	// counted.
	shadow.NTokens = 1000
	if sh, err := rb.RateReserve(ctxT(t), shadow); err != nil || !sh.Allowed || !sh.ShadowDenied {
		t.Fatalf("shadow, a cost above the burst: %+v, %v", sh, err)
	}
}
