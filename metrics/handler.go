package metrics

import (
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/governor-dev/governor/governor"
)

// DefaultMaxScrapes bounds the /metrics requests a Handler serves at once
// when HandlerOptions.MaxScrapes is zero. Each builds and encodes the
// whole page in memory (for thousands of resources, megabytes), so
// scrapes beyond the bound wait for a turn instead of multiplying it.
const DefaultMaxScrapes = 2

// HandlerOptions configure a Handler. The zero value of each field means
// the documented default.
type HandlerOptions struct {
	// MaxScrapes is how many /metrics requests are served at once
	// (default DefaultMaxScrapes); more wait, until their client gives up.
	MaxScrapes int
}

// Handler serves reg at /metrics and c's health at /healthz: 200 "ok"
// when the backend answers every read of a scrape within the timeout,
// else 503 and the failure. Metrics that fail to collect are left out of
// the page rather than failing it; governor_scrape_error tells. At most
// opts.MaxScrapes scrapes are served at once. A negative MaxScrapes is
// a wrapped governor.ErrInvalid.
func Handler(reg *prometheus.Registry, c *Collector, opts HandlerOptions) (http.Handler, error) {
	n := opts.MaxScrapes
	if n < 0 {
		return nil, fmt.Errorf("%w: metrics: at most %d scrapes at once; it must be positive (0: %d)", governor.ErrInvalid, n, DefaultMaxScrapes)
	}
	if n == 0 {
		n = DefaultMaxScrapes
	}
	turns := make(chan struct{}, n)
	page := promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, Registry: reg})
	bounded := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case turns <- struct{}{}:
		case <-r.Context().Done():
			http.Error(w, "governor: the client gave up while other scrapes were served", http.StatusServiceUnavailable)
			return
		}
		defer func() { <-turns }()
		page.ServeHTTP(w, r)
	})
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.InstrumentMetricHandler(reg, bounded))
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
	return mux, nil
}
