package redisbackend_test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/leasetest"
	"github.com/governor-dev/governor/internal/redistest"
	scripts "github.com/governor-dev/governor/scripts-lua"
)

// trips counts the round trips a client makes: each command sent alone
// is one, each pipeline one (go-redis runs a hook once per command or
// pipeline, before the write and after the reply), and records what
// each carried, but for the background histogram flushes (observeSHA).
type trips struct {
	mu   sync.Mutex
	sent []string
}

func (c *trips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *trips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.add(cmd)
		return next(ctx, cmd)
	}
}

func (c *trips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.add(cmds...)
		return next(ctx, cmds)
	}
}

// observeSHA names the histogram flushes a Governor sends in the
// background (at most once a second), which the count leaves out.
var observeSHA = func() string {
	h := sha1.Sum([]byte(scripts.Observe))
	return hex.EncodeToString(h[:])
}()

// dialSetup reports whether cmd is go-redis's setup of a connection it
// just dialed (HELLO, CLIENT SETINFO): the pool's, not a call's round
// trip. A waiter's Governor dials one when its connections are busy
// (the notification's and the acquire's), which the hand-off's count
// once took for a third round trip ("client+client").
func dialSetup(cmd redis.Cmder) bool {
	switch a := cmd.Args(); {
	case cmd.Name() == "hello":
		return true
	case cmd.Name() == "client" && len(a) > 1:
		sub, _ := a[1].(string)
		return strings.EqualFold(sub, "setinfo")
	}
	return false
}

func (c *trips) add(cmds ...redis.Cmder) {
	var names []string
	for _, cmd := range cmds {
		if a := cmd.Args(); len(a) > 1 && a[1] == observeSHA {
			continue
		}
		if dialSetup(cmd) {
			continue
		}
		names = append(names, cmd.Name())
	}
	if len(names) == 0 {
		return
	}
	c.mu.Lock()
	c.sent = append(c.sent, strings.Join(names, "+"))
	c.mu.Unlock()
}

// take returns the round trips counted since the last take.
func (c *trips) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.sent
	c.sent = nil
	return out
}

// TestSpendRoundTrips counts the round trips of a provider call on
// Redis: with a slot and rate budget, without a budget, with a budget
// reserved and settled in the call (each a round trip of its own), and
// through DoSpend, whose reserve goes in the rate reservation's pipeline
// (RateRequest.Budget) and settle in the slot release's (SettleRequest.Release):
// budgets add no round trip. With rate limits only (no slot), Do and
// DoSpend: the reserve goes with the rate's, the settle, with no release
// to ride on, with the token settle (SettleRequest.Adjust) when there is one
// (budgets add none), else alone (budgets add one). Counted by a go-redis hook, not
// timed. On a Cluster the hook sees the client's pipeline once; go-redis
// sends each node its part at once (one goroutine per node), one round
// trip in time.
//
//	go test -run TestSpendRoundTrips -v ./governor/redisbackend/
func TestSpendRoundTrips(t *testing.T) {
	t.Parallel() // its own servers and clients; counted, not timed
	t.Run("miniredis", func(t *testing.T) {
		spendRoundTrips(t, redis.NewClient(&redis.Options{Addr: miniredis.RunT(t).Addr()}))
	})
	t.Run("redis", func(t *testing.T) { spendRoundTrips(t, redis.NewClient(&redis.Options{Addr: redistest.Start(t).Addr})) })
	t.Run("cluster", func(t *testing.T) {
		spendRoundTrips(t, redis.NewClusterClient(&redis.ClusterOptions{Addrs: redistest.StartCluster(t, 3).Addrs()}))
	})
}

// hookedProvider is a Governor on rdb with hook added, and its provider
// anthropic with two slots.
func hookedProvider(t *testing.T, rdb redis.UniversalClient, hook redis.Hook) (*governor.Governor, *governor.Provider) {
	rdb.AddHook(hook)
	g, err := governor.New(openClient(t, rdb), governor.Options{Project: "trips"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	return g, g.Provider("anthropic", governor.ProviderLimits{MaxConcurrency: 2})
}

func spendRoundTrips(t *testing.T, rdb redis.UniversalClient) {
	count := &trips{}
	g, p := hookedProvider(t, rdb, count)
	// Rate limits only: no slot, so no release for the settle to go with.
	rates := g.Provider("openai", governor.ProviderLimits{Requests: governor.PerMinute(1e6)})
	// And with a tokens limit, whose settle the budgets' rides on.
	tokens := g.Provider("gemini", governor.ProviderLimits{Tokens: governor.PerMinute(1e9)})
	ctx := context.Background()
	day := governor.SpendBudget{Name: "day", Limit: 1000 * governor.MicroUnit, Unit: "USD", Window: governor.BudgetWindow{Per: 24 * time.Hour}}
	spends := []governor.BudgetSpend{{Budget: day, Amount: 10}}
	shapes := []struct {
		name string
		call func() error
	}{
		{"Do", func() error {
			return p.Do(ctx, 0, func(context.Context) (int64, error) { return 0, nil })
		}},
		{"Do+ReserveBudgets+Settle", func() error {
			return p.Do(ctx, 0, func(ctx context.Context) (int64, error) {
				r, err := leasetest.Reserve(ctx, g, spends, governor.BudgetOptions{})
				if err != nil {
					return 0, err
				}
				_, err = r.Settle(ctx, 7)
				return 0, err
			})
		}},
		{"DoSpend", func() error {
			return p.DoSpend(ctx, []governor.SpendBudget{day}, 10, 0, governor.BudgetOptions{},
				func(context.Context) (int64, int64, error) { return 0, 7, nil })
		}},
		{"rates only: Do", func() error {
			return rates.Do(ctx, 0, func(context.Context) (int64, error) { return 0, nil })
		}},
		{"rates only: DoSpend", func() error {
			return rates.DoSpend(ctx, []governor.SpendBudget{day}, 10, 0, governor.BudgetOptions{},
				func(context.Context) (int64, int64, error) { return 0, 7, nil })
		}},
		{"tokens only: Do", func() error {
			return tokens.Do(ctx, 100, func(context.Context) (int64, error) { return 80, nil })
		}},
		{"tokens only: DoSpend", func() error {
			return tokens.DoSpend(ctx, []governor.SpendBudget{day}, 10, 100, governor.BudgetOptions{},
				func(context.Context) (int64, int64, error) { return 80, 7, nil })
		}},
	}
	// Warm up: every script loaded (a first EVALSHA of a script the
	// server lacks is followed by an EVAL).
	for _, s := range shapes {
		if err := s.call(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
	}
	const calls = 20
	per := map[string]int{}
	for _, s := range shapes {
		count.take()
		for range calls {
			if err := s.call(); err != nil {
				t.Fatalf("%s: %v", s.name, err)
			}
		}
		sent := count.take()
		if len(sent)%calls != 0 {
			t.Fatalf("%s: %d round trips over %d calls: %v", s.name, len(sent), calls, sent)
		}
		per[s.name] = len(sent) / calls
		t.Logf("%s: %d round trips per call: %s", s.name, per[s.name], strings.Join(sent[:per[s.name]], ", "))
	}
	if got, want := per["DoSpend"]-per["Do"], 0; got != want {
		t.Errorf("DoSpend adds %d round trips to Do; want %d (the reserve goes with the rate's, the settle with the release)", got, want)
	}
	if got, want := per["Do+ReserveBudgets+Settle"]-per["Do"], 2; got != want {
		t.Errorf("a reserve and a settle of their own add %d round trips; want %d", got, want)
	}
	if got, want := per["rates only: DoSpend"]-per["rates only: Do"], 1; got != want {
		t.Errorf("without a slot, DoSpend adds %d round trips to Do; want %d (the settle, alone)", got, want)
	}
	if got, want := per["tokens only: DoSpend"]-per["tokens only: Do"], 0; got != want {
		t.Errorf("without a slot, with a token settle, DoSpend adds %d round trips to Do; want %d (the settle goes with the token settle)", got, want)
	}
	sts, _, err := g.Budgets(ctx, []string{"day"})
	if err != nil || len(sts) != 1 || sts[0].Spent != (4*calls+4)*7 || sts[0].Reserved != 0 {
		t.Fatalf("budget day after the calls: %+v, %v; want %d spent, nothing reserved", sts, err, (4*calls+4)*7)
	}
}

// failPipelines fails every pipeline while on, before it is sent.
type failPipelines struct{ on atomic.Bool }

func (f *failPipelines) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (f *failPipelines) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (f *failPipelines) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if f.on.Load() {
			err := errors.New("injected: connection reset")
			for _, c := range cmds {
				c.SetErr(err)
			}
			return err
		}
		return next(ctx, cmds)
	}
}

// TestDoSpendSettleFails: a settle sent with the slot's release that
// fails is DoSpend's error, and the estimate stays counted (reserved,
// counted as spent at its TTL): never under-counted.
func TestDoSpendSettleFails(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: miniredis.RunT(t).Addr()})
	fail := &failPipelines{}
	g, p := hookedProvider(t, rdb, fail)
	ctx := context.Background()
	day := governor.SpendBudget{Name: "day", Limit: 100, Window: governor.BudgetWindow{Per: 24 * time.Hour}}
	err := p.DoSpend(ctx, []governor.SpendBudget{day}, 40, 0, governor.BudgetOptions{}, func(context.Context) (int64, int64, error) {
		fail.on.Store(true)
		return 0, 7, nil
	})
	fail.on.Store(false)
	if err == nil || !strings.Contains(err.Error(), "not settled (it counts at its estimate)") || !strings.Contains(err.Error(), "injected") {
		t.Fatalf("DoSpend whose settle failed: %v; want the settle's error", err)
	}
	sts, _, err := g.Budgets(ctx, []string{"day"})
	if err != nil || len(sts) != 1 || sts[0].Reserved != 40 || sts[0].Spent != 0 || sts[0].Open != 1 {
		t.Fatalf("budget day: %+v, %v; want the estimate of 40 still reserved", sts, err)
	}
}
