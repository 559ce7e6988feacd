package governor_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/capacity"
	"github.com/governor-dev/governor/governor/filebackend"
)

// BenchmarkLocalGrant: a slot taken and released through Governor.Acquire
// from the backend (central) and from this process's capacity share
// (share), side by side on one file backend; p50-ns is the median of
// the pairs' times, ns/op their mean.
//
//	go test -run '^$' -bench LocalGrant -benchtime 20000x ./governor/
func BenchmarkLocalGrant(b *testing.B) {
	for _, way := range []struct {
		name string
		caps map[string]capacity.Config
	}{
		{"central", nil},
		{"share", map[string]capacity.Config{"hot": {Lease: 30 * time.Second, Refresh: 5 * time.Second}}},
	} {
		b.Run(way.name, func(b *testing.B) {
			fb, err := filebackend.New(b.TempDir(), filebackend.Options{})
			if err != nil {
				b.Fatal(err)
			}
			g, err := governor.New(fb, governor.Options{Project: "bench", Capacity: way.caps})
			if err != nil {
				b.Fatal(err)
			}
			defer g.Close()
			ctx := context.Background()
			pair := func() {
				l, err := g.Acquire(ctx, "hot", governor.AcquireOptions{Limit: 64})
				if err != nil {
					b.Fatal(err)
				}
				if err := l.Release(); err != nil {
					b.Fatal(err)
				}
			}
			pair() // the share's first refresh, the scripts' first run
			took := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				pair()
				took = append(took, time.Since(start))
			}
			b.StopTimer()
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Nanoseconds()), "p50-ns")
		})
	}
}
