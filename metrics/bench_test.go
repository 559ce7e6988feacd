package metrics_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/redisbackend"
	"github.com/governor-dev/governor/metrics"
)

// BenchmarkMetricsManyResources measures a /metrics page of 5,000 used
// resources (miniredis) and the peak heap of 32 scrapes at once, sharing
// one collection (Handler) and, for comparison, each collecting its own
// (a plain promhttp handler).
//
//	go test -run '^$' -bench ManyResources -benchtime 1x ./metrics/
func BenchmarkMetricsManyResources(b *testing.B) {
	const resources, parallel = 5000, 32
	ctx := context.Background()
	m := miniredis.RunT(b)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	be, err := redisbackend.New(ctx, rdb, redisbackend.OwnClient())
	if err != nil {
		b.Fatal(err)
	}
	g, err := governor.New(be, governor.Options{Project: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	for i := range resources {
		l, err := g.Acquire(ctx, fmt.Sprintf("issue:%d", i), governor.AcquireOptions{Limit: 1})
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Release(); err != nil {
			b.Fatal(err)
		}
	}
	time.Sleep(2 * time.Second) // the waits reach the backend: two of the Governor's 1 s flushes

	for _, tc := range []struct {
		name   string
		shared bool
	}{{"shared", true}, {"unshared", false}} {
		b.Run(tc.name, func(b *testing.B) {
			c, err := metrics.NewCollector(g, metrics.CollectorOptions{Timeout: time.Minute})
			if err != nil {
				b.Fatal(err)
			}
			reg := prometheus.NewRegistry()
			reg.MustRegister(c)
			var h http.Handler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
			if tc.shared {
				h = metrics.Handler(reg, c)
			}
			srv := httptest.NewServer(h)
			defer srv.Close()
			var page atomic.Int64
			var peak atomic.Uint64
			stop := make(chan struct{})
			sampled := make(chan struct{})
			go func() {
				defer close(sampled)
				var ms runtime.MemStats
				for {
					runtime.ReadMemStats(&ms)
					if ms.HeapAlloc > peak.Load() {
						peak.Store(ms.HeapAlloc)
					}
					select {
					case <-stop:
						return
					case <-time.After(2 * time.Millisecond):
					}
				}
			}()
			for range b.N {
				var wg sync.WaitGroup
				for range parallel {
					wg.Go(func() {
						resp, err := http.Get(srv.URL + "/metrics")
						if err != nil {
							b.Error(err)
							return
						}
						n, _ := io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						page.Store(n)
					})
				}
				wg.Wait()
			}
			close(stop)
			<-sampled
			b.ReportMetric(float64(page.Load())/1e6, "page-MB")
			b.ReportMetric(float64(peak.Load())/1e6, "peak-heap-MB")
		})
	}
}
