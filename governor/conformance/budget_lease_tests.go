package conformance

import (
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/eventkind"
)

// budgetRenewedWithLease: a reservation named after a lease (its id the
// lease's, its secret the lease's) lives as the lease: every renewal
// (Renew, RenewBatch, a renewal by another process, which did not grant
// it) moves its expiry to the lease's, so that it stays open past its
// own TTL while the lease is renewed, and counts at its estimate (an
// abandoned event) once the lease expires unrenewed. A reservation of
// the same id made under another secret is not renewed by the lease.
func (s *suite) budgetRenewedWithLease(t *testing.T) {
	bo, key := s.open(t, "spend")
	b := asFull(t, bo)
	p := key.Project
	// Four steps (two ways, two each) pass the TTL; each step leaves a
	// renewal most of a TTL to land in, on a loaded machine's real clock
	// (2 s and 700 ms lost the lease beside the other lanes at load 25).
	ttl, step := 4*time.Second, 1100*time.Millisecond
	start := budgetNow(t, b, p).Add(-time.Second)
	day := func(amount int64) governor.BudgetCharge { return charge("day", 100, amount, start, time.Hour) }
	lease := func() governor.Request {
		r := req(key, 2, 1, governor.Fail)
		r.Secret = "secret-" + id()
		r.ID, r.TTL = governor.LeaseIDOf(r.Secret), ttl
		mustAcquire(t, b, r, governor.Granted)
		return r
	}
	l, other := lease(), lease()
	for _, x := range []struct {
		r      governor.Request
		secret string
		amount int64
	}{{l, l.Secret, 30}, {other, "not-" + other.Secret, 5}} {
		res, err := b.BudgetReserve(ctxT(t), governor.BudgetRequest{Project: p, Lease: x.r.ID, Secret: x.secret, TTL: ttl, By: "conformance",
			Charges: []governor.BudgetCharge{day(x.amount)}})
		if err != nil || !res.Allowed {
			t.Fatalf("reserve under lease %s: %+v, %v", x.r.ID, res, err)
		}
	}
	elsewhere := s.openFull(t) // another process: it did not grant the lease
	renewals := []struct {
		name  string
		renew func(r governor.Request) error
	}{
		{"Renew", func(r governor.Request) error {
			_, err := b.Renew(ctxT(t), governor.Renewal{Key: key, ID: r.ID, Secret: r.Secret, TTL: ttl})
			return err
		}},
		{"a renewal by another process", func(r governor.Request) error {
			_, err := elsewhere.Renew(ctxT(t), governor.Renewal{Key: key, ID: r.ID, Secret: r.Secret, TTL: ttl})
			return err
		}},
	}
	if br, ok := b.(governor.BatchRenewer); ok {
		renewals = append(renewals, struct {
			name  string
			renew func(r governor.Request) error
		}{"RenewBatch", func(r governor.Request) error {
			return br.RenewBatch(ctxT(t), []governor.Renewal{{Key: key, ID: r.ID, Secret: r.Secret, TTL: ttl}})[0].Err
		}})
	}
	for _, rn := range renewals {
		for range 2 {
			s.h.Advance(t, step)
			for _, r := range []governor.Request{l, other} {
				if err := rn.renew(r); err != nil {
					t.Fatalf("%s of lease %s: %v", rn.name, r.ID, err)
				}
			}
		}
		if st := budgetState(t, b, p, "day"); st.Reserved < 30 {
			t.Fatalf("after %s: %+v; want the lease's reservation (30) open", rn.name, st)
		}
	}
	// Past both reservations' own TTL by now (2 steps per way, at least
	// 2 ways): the lease's is open, the other's counted.
	st := budgetState(t, b, p, "day")
	wantBudget(t, "after the renewals", st, 5, 30, 100)
	if st.Open != 1 {
		t.Fatalf("after the renewals: %d open; want the lease's reservation open", st.Open)
	}
	s.h.Advance(t, ttl+step) // the lease expires unrenewed: its holder died
	wantBudget(t, "after the lease expired", budgetState(t, b, p, "day"), 35, 0, 100)
	if !hasBudgetEvent(budgetEvents(t, b, p), "day", eventkind.BudgetAbandoned) {
		t.Fatal("no abandoned event")
	}
	if got, err := b.BudgetSettle(ctxT(t), governor.SettleRequest{Project: p, Lease: l.ID, Secret: l.Secret,
		Actual: []governor.BudgetAmount{{Name: "day", Amount: 1}}, By: "conformance"}); err != nil || got.Settled {
		t.Fatalf("late settle: %+v, %v; want nothing settled", got, err)
	}
	wantBudget(t, "after the late settle", budgetState(t, b, p, "day"), 35, 0, 100)
}
