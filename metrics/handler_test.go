package metrics_test

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/governor-dev/governor/metrics"
)

// probe is a collector that counts the collections in flight and holds
// each until released.
type probe struct {
	desc     *prometheus.Desc
	release  chan struct{}
	inFlight atomic.Int32
	most     atomic.Int32
}

func (p *probe) Describe(ch chan<- *prometheus.Desc) { ch <- p.desc }

func (p *probe) Collect(ch chan<- prometheus.Metric) {
	n := p.inFlight.Add(1)
	for {
		m := p.most.Load()
		if n <= m || p.most.CompareAndSwap(m, n) {
			break
		}
	}
	<-p.release
	p.inFlight.Add(-1)
	ch <- prometheus.MustNewConstMetric(p.desc, prometheus.GaugeValue, 1)
}

// Many scrapes at once share one collection: the collections in flight
// (each builds the whole page in memory) never exceed one, and every
// scrape is answered.
func TestMetricsHandlerBoundsScrapes(t *testing.T) {
	const bound, scrapes = 1, 32
	p := &probe{desc: prometheus.NewDesc("governor_probe", "test", nil, nil), release: make(chan struct{})}
	reg := prometheus.NewRegistry()
	reg.MustRegister(p)
	c := newCollector(t, fixedState(), metrics.CollectorOptions{})
	srv := httptest.NewServer(metrics.Handler(reg, c))
	defer srv.Close()

	var wg sync.WaitGroup
	codes := make(chan int, scrapes)
	for range scrapes {
		wg.Go(func() {
			resp, err := http.Get(srv.URL + "/metrics")
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			codes <- resp.StatusCode
		})
	}
	deadline := time.Now().Add(20 * time.Second)
	for p.inFlight.Load() < bound && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	// The others have had time to arrive; none may start another.
	time.Sleep(200 * time.Millisecond)
	close(p.release)
	wg.Wait()
	close(codes)
	n := 0
	for code := range codes {
		if code != http.StatusOK {
			t.Errorf("a scrape got %d", code)
		}
		n++
	}
	if n != scrapes {
		t.Errorf("%d of %d scrapes answered", n, scrapes)
	}
	if m := p.most.Load(); m > bound || m < 1 {
		t.Fatalf("%d collections in flight at most, want 1 to %d", m, bound)
	}
}
