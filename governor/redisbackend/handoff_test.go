package redisbackend_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/redistest"
)

// TestHandOffRoundTrips counts the round trips of a hand-off. To a
// waiter of the releasing Governor: one, the release, whose reply
// carries the grant the waiter takes (release.lua's handed grants,
// Result.Sent). To a waiter of another Governor (as another process):
// the release, then the waiter's own acquire, told by its channel. The
// handed lease is the one the backend granted: its token, limit and
// holder record. Counted by a go-redis hook, not timed.
//
//	go test -run TestHandOffRoundTrips -v ./governor/redisbackend/
func TestHandOffRoundTrips(t *testing.T) {
	t.Parallel() // its own servers and clients; counted, not timed
	t.Run("miniredis", func(t *testing.T) {
		addr := miniredis.RunT(t).Addr()
		handOffRoundTrips(t, func() redis.UniversalClient { return redis.NewClient(&redis.Options{Addr: addr}) })
	})
	t.Run("redis", func(t *testing.T) {
		addr := redistest.Start(t).Addr
		handOffRoundTrips(t, func() redis.UniversalClient { return redis.NewClient(&redis.Options{Addr: addr}) })
	})
	t.Run("cluster", func(t *testing.T) {
		addrs := redistest.StartCluster(t, 3).Addrs()
		handOffRoundTrips(t, func() redis.UniversalClient { return redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs}) })
	})
}

func handOffRoundTrips(t *testing.T, client func() redis.UniversalClient) {
	ctx := context.Background()
	gov := func(hook redis.Hook) *governor.Governor {
		rdb := client()
		rdb.AddHook(hook)
		g, err := governor.New(openClient(t, rdb), governor.Options{Project: "handoff"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = g.Close() })
		return g
	}
	mine, theirs := &trips{}, &trips{}
	g, other := gov(mine), gov(theirs)
	for _, tc := range []struct {
		name   string
		waiter *governor.Governor
		want   int // round trips of both Governors from the release to the waiter's lease
	}{{"same Governor", g, 1}, {"another Governor", other, 2}} {
		for round := range 3 {
			holder, err := g.Acquire(ctx, "baton", governor.AcquireOptions{Limit: 1})
			if err != nil {
				t.Fatal(err)
			}
			queued := make(chan struct{}, 1)
			type got struct {
				l   *governor.Lease
				err error
			}
			done := make(chan got, 1)
			go func() {
				l, err := tc.waiter.Acquire(ctx, "baton", governor.AcquireOptions{Limit: 1, Mode: governor.Wait,
					OnQueued: func(governor.Result) {
						select {
						case queued <- struct{}{}:
						default:
						}
					}})
				done <- got{l, err}
			}()
			select {
			case <-queued:
			case w := <-done:
				t.Fatalf("%s: the waiter did not queue behind a holder: %v, %v", tc.name, w.l, w.err)
			case <-time.After(30 * time.Second):
				t.Fatalf("%s: the waiter did not queue in 30 s", tc.name)
			}
			mine.take()
			theirs.take()
			if err := holder.Release(); err != nil {
				t.Fatal(err)
			}
			var w got
			select {
			case w = <-done:
			case <-time.After(30 * time.Second):
				t.Fatalf("%s: the waiter was not granted in 30 s after the release", tc.name)
			}
			if w.err != nil {
				t.Fatalf("%s: waiter: %v", tc.name, w.err)
			}
			sent := append(mine.take(), theirs.take()...)
			st, err := g.Status(ctx, "baton")
			if err != nil {
				t.Fatal(err)
			}
			if len(st.Holders) != 1 || st.Holders[0].LeaseID != w.l.ID() || st.Holders[0].Token != w.l.Token() || w.l.Token() <= holder.Token() || w.l.Limit() != 1 {
				t.Fatalf("%s: the waiter's lease %s token %d limit %d; the holder's token %d; holders %+v; want it the one holder, with a later token, limit 1",
					tc.name, w.l.ID(), w.l.Token(), w.l.Limit(), holder.Token(), st.Holders)
			}
			if err := w.l.Release(); err != nil {
				t.Fatalf("%s: the handed lease's release: %v", tc.name, err)
			}
			// The first round of each shape may load a script (NOSCRIPT,
			// then EVAL): only the later ones count.
			if round > 0 && len(sent) != tc.want {
				t.Errorf("%s: %d round trips from the release to the waiter's lease: %s; want %d",
					tc.name, len(sent), strings.Join(sent, ", "), tc.want)
			}
			t.Logf("%s: %d round trips: %s", tc.name, len(sent), strings.Join(sent, ", "))
		}
	}
}
