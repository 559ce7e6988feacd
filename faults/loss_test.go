package faults_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/redisbackend"
	"github.com/governor-dev/governor/internal/redistest"
)

// Redis lost its data (restarted without persistence) while a lease was
// held and two waiters were queued, each on its own Governor. The
// protected work records its own progress on CLOCK_MONOTONIC: the
// holder's while its lease reads as held, each waiter's from its grant
// to its release. With the quarantine (the default), the merged spans
// never carry more than the limit: the first waiter to re-queue finds
// the resource without state, and grants wait for the longest TTL, by
// which time the old holder has renewed and learnt. Without it, a waiter
// can be granted before the old holder's next renewal: the overlap is
// measured and logged (not asserted: it depends on who speaks first).
func TestRedisLossQuarantine(t *testing.T) {
	t.Parallel()
	t.Run("on", func(t *testing.T) {
		spans, overlap := lossScenario(t, true)
		checkSpans(t, spans, 1)
		if overlap > 0 {
			t.Fatalf("a waiter was granted %v before the old holder learnt its lease was gone", overlap)
		}
	})
	t.Run("off", func(t *testing.T) {
		spans, overlap := lossScenario(t, false)
		t.Logf("without the quarantine: %d spans; a waiter held the slot for %v while the old holder's work still ran", len(spans), overlap.Round(time.Millisecond))
	})
}

// lossScenario runs the scenario and returns the work's spans and how
// long the first grant after the restart came before the old holder's
// work stopped (0 if after).
func lossScenario(t *testing.T, quarantine bool) ([]span, time.Duration) {
	s := redistest.Start(t)
	project := uniq("loss")
	key := governor.Key{Project: project, Resource: "heavy"}
	const ttl = 2 * time.Second
	gov := func(who string) *governor.Governor {
		rdb := redis.NewClient(redisOptions(s.Addr))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		b, err := redisbackend.New(ctx, rdb, redisbackend.OwnClient(), redisbackend.LossQuarantine(quarantine))
		if err != nil {
			rdb.Close()
			t.Fatal(err)
		}
		g, err := governor.New(b, governor.Options{Project: project, TTL: ttl, QueueTTL: time.Second, Session: who})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { g.Close() })
		return g
	}

	var (
		mu    sync.Mutex
		spans []span
		wg    sync.WaitGroup
	)
	// work runs while l reads as held (the holder) or for d (a waiter,
	// which then releases), recording its own progress every 10ms.
	work := func(l *governor.Lease, who string, d time.Duration) {
		wg.Go(func() {
			sp := span{start: monoNow(), weight: 1, who: who}
			sp.end = sp.start
			for end := time.Now().Add(d); time.Now().Before(end) && l.Err() == nil; time.Sleep(10 * time.Millisecond) {
				sp.end = monoNow()
			}
			mu.Lock()
			spans = append(spans, sp)
			mu.Unlock()
			if d < time.Minute {
				_ = l.Release()
			}
		})
	}

	lh, err := gov("old").Acquire(context.Background(), "heavy", governor.AcquireOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	work(lh, "old", time.Hour)

	type served struct {
		who string
		l   *governor.Lease
		err error
		at  int64
	}
	results := make(chan served, 2)
	for _, who := range []string{"w1", "w2"} {
		g := gov(who)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			l, err := g.Acquire(ctx, "heavy", governor.AcquireOptions{Limit: 1, Mode: governor.Wait})
			at := monoNow()
			if err == nil {
				work(l, who, 300*time.Millisecond)
			}
			results <- served{who, l, err, at}
		}()
	}
	direct := backend(t, client(t, s.Addr))
	eventually(t, 20*time.Second, "two waiters queued", func() bool { return len(status(t, direct, key).Waiters) == 2 })

	restartLosing(t, s, lh)
	if !errors.Is(lh.Err(), governor.ErrLeaseLost) {
		t.Fatalf("holder: %v, want ErrLeaseLost", lh.Err())
	}
	var first int64
	for range 2 {
		select {
		case r := <-results:
			if r.err != nil {
				t.Fatalf("waiter %s: %v", r.who, r.err)
			}
			if r.l.Token() <= lh.Token() {
				t.Fatalf("waiter %s got token %d after the restart, not above %d from before", r.who, r.l.Token(), lh.Token())
			}
			if first == 0 || r.at < first {
				first = r.at
			}
		case <-time.After(45 * time.Second):
			t.Fatal("a waiter was not served after the restart")
		}
	}
	wg.Wait()
	var oldEnd int64
	for _, sp := range spans {
		if sp.who == "old" {
			oldEnd = sp.end
		}
	}
	return spans, max(0, time.Duration(oldEnd-first))
}
