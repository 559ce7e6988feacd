package bridge_test

import (
	"context"
	"testing"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/bridge"
)

// BenchmarkPairs is acquire+release pairs through the bridge, through the
// acquire pipeline it calls (no wire: the bridge's own cost is the
// difference) and through the library, on the same Redis:
//
//	GOVERNOR_REQUIRE_REDIS=1 go test -run '^$' -bench Pairs ./internal/bridge/
func BenchmarkPairs(b *testing.B) {
	st := redisStore(b)
	b.Run("bridge", func(b *testing.B) {
		c := start(b, st)
		c.hello()
		for i := 0; i < b.N; i++ {
			got := c.call("acquire", map[string]any{"resources": []string{"p"}, "limit": 1})
			c.call("release", map[string]any{"lease": got["lease"]})
		}
	})
	b.Run("pipeline", func(b *testing.B) {
		g, err := governor.New(st(b), governor.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer g.Close()
		acq := bridge.AcquirePipeline(emptyCatalog(b))
		for i := 0; i < b.N; i++ {
			h, err := acq(context.Background(), g, bridge.AcquireArgs{Resources: []string{"r"}, Limit: 1}, bridge.Events{})
			if err != nil {
				b.Fatal(err)
			}
			if err := h.Release(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("library", func(b *testing.B) {
		g, err := governor.New(st(b), governor.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer g.Close()
		for i := 0; i < b.N; i++ {
			l, err := g.Acquire(context.Background(), "q", governor.AcquireOptions{Limit: 1})
			if err != nil {
				b.Fatal(err)
			}
			if err := l.Release(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
