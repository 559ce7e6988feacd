package metrics

import (
	"fmt"
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
)

// Handler serves reg at /metrics and c's health at /healthz: 200 "ok"
// when the backend answers every read of a scrape within the timeout,
// else 503 and the failure. Metrics that fail to collect are left out of
// the page rather than failing it; governor_scrape_error tells.
//
// Scrapes that arrive while a collection is in flight wait for it and
// share its result, so at most one collection (which holds the whole
// page in memory: for thousands of resources, tens of megabytes) is in
// flight whatever the number of scrapes; each is then encoded straight
// to its client.
func Handler(reg *prometheus.Registry, c *Collector) http.Handler {
	page := promhttp.HandlerFor(&sharedGatherer{g: reg}, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, Registry: reg})
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.InstrumentMetricHandler(reg, page))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if err := c.Healthy(r.Context()); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, err)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<html><head><title>governor</title></head><body><h1>governor</h1>`+
			`<p><a href="metrics">/metrics</a> &middot; <a href="healthz">/healthz</a></p></body></html>`+"\n")
	})
	return mux
}

// sharedGatherer lets concurrent Gathers share the one in flight. Its
// result is only read (encoded) by those who share it. A Gather waits
// for the one in flight without a deadline of its own: the Collector
// bounds its backend reads by its timeout.
type sharedGatherer struct {
	g prometheus.Gatherer

	mu       sync.Mutex
	inflight *gathering
}

type gathering struct {
	done chan struct{}
	mfs  []*dto.MetricFamily
	err  error
}

func (s *sharedGatherer) Gather() ([]*dto.MetricFamily, error) {
	s.mu.Lock()
	if f := s.inflight; f != nil {
		s.mu.Unlock()
		<-f.done
		return f.mfs, f.err
	}
	f := &gathering{done: make(chan struct{})}
	s.inflight = f
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.inflight = nil
		s.mu.Unlock()
		close(f.done)
	}()
	f.mfs, f.err = s.g.Gather()
	return f.mfs, f.err
}
