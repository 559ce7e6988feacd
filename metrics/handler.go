package metrics

import (
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Handler serves reg at /metrics and c's health at /healthz: 200 "ok"
// when the backend answers every read of a scrape within the timeout,
// else 503 and the failure. Metrics that fail to collect are left out of
// the page rather than failing it; governor_scrape_error tells.
func Handler(reg *prometheus.Registry, c *Collector) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.InstrumentMetricHandler(reg,
		promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, Registry: reg})))
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
