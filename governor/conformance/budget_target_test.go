package conformance

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/filebackend"
	"github.com/governor-dev/governor/internal/leasetest"
	"github.com/governor-dev/governor/internal/redistest"
)

// budgetStores opens n backends on one file state dir and n on one
// Redis, as n processes would (each its own backend, its own files or
// connection).
func budgetStores(t *testing.T) map[string]func(t *testing.T) full {
	dir := t.TempDir()
	server := redistest.Start(t)
	return map[string]func(t *testing.T) full{
		"file": func(t *testing.T) full {
			b, err := filebackend.New(dir, filebackend.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = b.Close() })
			return b
		},
		"redis": func(t *testing.T) full {
			b := openRedis(t, server.Addr)
			t.Cleanup(func() { _ = b.Close() })
			return b
		},
	}
}

// TestBudgetTarget: 8 workers, each on its own backend, make 200 calls
// each with random upper-bound estimates and random actuals at most
// their estimates, against a budget that demand exceeds: what settles
// never passes the limit, and at least 95% of it is used.
func TestBudgetTarget(t *testing.T) {
	const workers, calls, limit = 8, 200, 100_000
	for name, open := range budgetStores(t) {
		t.Run(name, func(t *testing.T) {
			p := fmt.Sprintf("target-%d", time.Now().UnixNano())
			day := governor.SpendBudget{Name: "day", Limit: limit, Window: governor.BudgetWindow{Per: 24 * time.Hour}}
			var wg sync.WaitGroup
			var mu sync.Mutex
			var settled, refused int64
			for w := range workers {
				g, err := governor.New(open(t), governor.Options{Project: p})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = g.Close() })
				wg.Go(func() {
					r := rand.New(rand.NewPCG(uint64(w), 7))
					for range calls {
						est := 50 + r.Int64N(200)
						res, err := leasetest.Reserve(context.Background(), g, []governor.BudgetSpend{{Budget: day, Amount: est}}, governor.BudgetOptions{})
						if err != nil {
							mu.Lock()
							refused++
							mu.Unlock()
							continue
						}
						actual := est/2 + r.Int64N(est/2+1)
						if _, err := res.Settle(context.Background(), actual); err != nil {
							t.Error(err)
							return
						}
						mu.Lock()
						settled += actual
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			g, err := governor.New(open(t), governor.Options{Project: p})
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			sts, _, err := g.Budgets(context.Background(), nil)
			if err != nil || len(sts) != 1 {
				t.Fatalf("budgets: %+v, %v", sts, err)
			}
			st := sts[0]
			t.Logf("%s: settled %d of %d (%.1f%%), %d calls refused", name, st.Spent, int64(limit), 100*float64(st.Spent)/limit, refused)
			if st.Spent != settled || st.Spent > limit || st.Reserved != 0 {
				t.Fatalf("spent %d (the workers settled %d), reserved %d; want equal, at most %d", st.Spent, settled, st.Reserved, int64(limit))
			}
			if st.Spent < limit*95/100 {
				t.Fatalf("spent %d; want at least 95%% of %d", st.Spent, int64(limit))
			}
		})
	}
}

// TestBudgetCheckThenSpend: LiteLLM's shape — read the spend so far,
// call if below the limit, record the cost after — overspends when
// concurrent callers check before any of them records; governor's
// reserve-then-settle, under the same schedule, does not. Eight callers
// of $1 each meet a $100 budget with $99.50 spent, all checking (or
// reserving) before any spends.
func TestBudgetCheckThenSpend(t *testing.T) {
	const callers, limit, spentBefore, cost = 8, 100 * governor.MicroUnit, 99_500_000, governor.MicroUnit
	for name, open := range budgetStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			b := open(t)
			now := time.Now()
			start, end := now.Add(-time.Hour), now.Add(time.Hour)
			run := func(p string, governed bool) int64 {
				c := governor.BudgetCharge{Name: "day", Limit: limit, Amount: spentBefore, Start: start, End: end}
				if res, err := b.BudgetReserve(ctx, governor.BudgetRequest{Project: p, Lease: "before", Secret: "s", Charges: []governor.BudgetCharge{c}}); err != nil || !res.Allowed {
					t.Fatalf("the spend before: %+v, %v", res, err)
				}
				if _, err := b.BudgetSettle(ctx, governor.SettleRequest{Project: p, Lease: "before", Secret: "s", Actual: nil, By: ""}); err != nil {
					t.Fatal(err)
				}
				var checked, wg sync.WaitGroup
				checked.Add(callers)
				for i := range callers {
					wg.Go(func() {
						lease := fmt.Sprintf("call-%d", i)
						ok := false
						c := governor.BudgetCharge{Name: "day", Limit: limit, Amount: cost, Start: start, End: end}
						if governed {
							res, err := b.BudgetReserve(ctx, governor.BudgetRequest{Project: p, Lease: lease, Secret: "s", Charges: []governor.BudgetCharge{c}})
							ok = err == nil && res.Allowed
						} else {
							sts, _, err := b.Budgets(ctx, p, nil)
							ok = err == nil && sts[0].Spent < limit
						}
						checked.Done()
						checked.Wait() // every caller has checked before any spends
						if !ok {
							return
						}
						if !governed { // record the cost after the call, unchecked: no limit in the way
							if err := b.BudgetAdmin(ctx, p, "day", governor.BudgetSetLimit, governor.MaxBudgetAmount, "naive"); err != nil {
								t.Error(err)
							}
							if _, err := b.BudgetReserve(ctx, governor.BudgetRequest{Project: p, Lease: lease, Secret: "s", Charges: []governor.BudgetCharge{c}}); err != nil {
								t.Error(err)
							}
						}
						if _, err := b.BudgetSettle(ctx, governor.SettleRequest{Project: p, Lease: lease, Secret: "s", Actual: nil, By: ""}); err != nil {
							t.Error(err)
						}
					})
				}
				wg.Wait()
				sts, _, err := b.Budgets(ctx, p, nil)
				if err != nil {
					t.Fatal(err)
				}
				return sts[0].Spent
			}
			naive := run(fmt.Sprintf("naive-%d", now.UnixNano()), false)
			governed := run(fmt.Sprintf("governed-%d", now.UnixNano()), true)
			t.Logf("%s: check-then-spend spent $%.2f of $100; reserve-then-settle $%.2f", name, float64(naive)/governor.MicroUnit, float64(governed)/governor.MicroUnit)
			if naive <= limit {
				t.Fatalf("check-then-spend spent %d; the reproduction should overspend %d", naive, int64(limit))
			}
			if governed > limit {
				t.Fatalf("reserve-then-settle spent %d over the limit %d", governed, int64(limit))
			}
		})
	}
}

// BenchmarkBudgets1000 reads a project's 1,000 budgets (the budgets
// view's read) on the file backend and on Redis.
//
//	go test -run '^$' -bench BenchmarkBudgets1000 ./governor/conformance/
func BenchmarkBudgets1000(b *testing.B) {
	dir := b.TempDir()
	server := redistest.Start(b)
	fb, err := filebackend.New(dir, filebackend.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer fb.Close()
	rb := openRedis(b, server.Addr)
	defer rb.Close()
	for name, be := range map[string]full{"file": fb, "redis": rb} {
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			p := fmt.Sprintf("bench-%d", time.Now().UnixNano())
			now := time.Now()
			for i := 0; i < 1000; i += governor.MaxBudgetsPerCall {
				req := governor.BudgetRequest{Project: p, Lease: fmt.Sprintf("l%d", i), Secret: "s"}
				for j := i; j < min(i+governor.MaxBudgetsPerCall, 1000); j++ {
					req.Charges = append(req.Charges, governor.BudgetCharge{Name: fmt.Sprintf("team-%04d", j), Limit: 100, Amount: 1,
						Start: now.Add(-time.Hour), End: now.Add(time.Hour)})
				}
				if _, err := be.BudgetReserve(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for b.Loop() {
				sts, _, err := be.Budgets(ctx, p, nil)
				if err != nil || len(sts) != 1000 {
					b.Fatalf("%d budgets, %v", len(sts), err)
				}
			}
		})
	}
}
