package statuspage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/governor-dev/governor/internal/view"
	"github.com/governor-dev/governor/internal/words"
	"github.com/governor-dev/governor/metrics"
)

// ShutdownTimeout bounds how long Serve waits for requests in progress
// once its context ends.
const ShutdownTimeout = 10 * time.Second

// Options are what 'governor serve' was asked for.
type Options struct {
	Listen string // HOST:PORT, when Unix is empty
	Unix   string // a unix socket path to listen on instead (created 0600)

	Timeout   time.Duration // bound on the backend reads of one request or scrape
	Retention time.Duration // forget resources idle this long

	Page    bool   // serve the page and the API; false: /metrics and /healthz alone
	Token   string // the admin token: actions on the page and the API ("" read-only)
	Limits  map[string]int
	Locks   map[string]string
	Budgets map[string]view.BudgetConfig // the configured spend budgets
	Version string

	// Source is the backend, opened lazily; Redis says a backend that
	// does not answer at start is not an error (it may come up later).
	Source *Reopening
	Redis  bool

	Stderr io.Writer
}

// Serve serves o until ctx ends, then shuts down gracefully. It fails
// when the backend cannot open (a file backend; a Redis one may come up
// later), when it cannot listen, or when serving fails.
func Serve(ctx context.Context, o Options) error {
	octx, cancel := context.WithTimeout(ctx, o.Timeout)
	_, err := o.Source.Governor(octx)
	cancel()
	if err != nil {
		// A Redis that is down now may come up later (an exporter
		// often starts first): serve, report governor_up 0, and
		// connect at a later scrape.
		if !o.Redis {
			return err
		}
		fmt.Fprintf(o.Stderr, "governor: %v; serving anyway, with governor_up 0 until it answers\n", words.Message(err))
	}
	c, err := metrics.NewCollector(o.Source, metrics.CollectorOptions{Timeout: o.Timeout, Limits: o.Limits, MkdirLocks: o.Locks})
	if err != nil {
		return err
	}
	ln, where, err := listen(o)
	if err != nil {
		return err
	}
	defer ln.Close()
	hist := NewHistory(o.Limits)
	srv := newHTTPServer(handler(o, c, hist, loopback(ln.Addr())), defaultLimits)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	for _, w := range exposureWarnings(o, ln.Addr(), otherUsers) {
		fmt.Fprintln(o.Stderr, "governor: warning: "+w)
	}
	sweepCtx, stopSweep := context.WithCancel(ctx)
	swept := make(chan struct{})
	go func() {
		defer close(swept)
		o.Source.Sweep(sweepCtx, o.Retention, o.Timeout, o.Stderr)
	}()
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		if o.Page {
			hist.Run(sweepCtx, o.Source, o.Timeout)
		}
	}()
	defer func() {
		stopSweep()
		<-swept
		<-polled
	}()
	if o.Page {
		actions := "read-only"
		if o.Token != "" {
			actions = "with actions"
		}
		fmt.Fprintf(o.Stderr, "governor: status page (%s) on %s\n", actions, where("/"))
	}
	fmt.Fprintf(o.Stderr, "governor: serving project %s on %s\n", o.Source.Project(), where("/metrics"))
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	fmt.Fprintln(o.Stderr, "governor: serve stopped")
	return nil
}

// handler is everything serve serves: /metrics and /healthz from c, the
// page and the API with o.Page; on a loopback listener (loop), for
// loopback Hosts only, on every path.
func handler(o Options, c *metrics.Collector, hist *History, loop bool) http.Handler {
	h := metrics.Handler(reg(c, o.Timeout), c)
	if o.Page {
		mux := http.NewServeMux()
		mux.Handle("/metrics", h)
		mux.Handle("/healthz", h)
		var admin Admin
		if o.Token != "" {
			admin = o.Source
		}
		NewPage(o.Source, PageOptions{Timeout: o.Timeout, Limits: o.Limits, Locks: o.Locks, Budgets: o.Budgets, Version: o.Version, History: hist, Admin: admin, Token: o.Token}).Register(mux)
		h = mux
	}
	if loop {
		h = LoopbackOnly(h)
	}
	return h
}

// serverLimits bound what one client can hold of serve: a slow client
// (headers or body trickling in) is cut off, an idle keep-alive closed,
// and a request's headers capped.
type serverLimits struct {
	readHeader, read, idle time.Duration
	maxHeaderBytes         int
}

// defaultLimits: requests are a GET or a small JSON POST; a client that
// has not sent one in 10 s is not a browser or a scraper.
var defaultLimits = serverLimits{readHeader: 5 * time.Second, read: 10 * time.Second, idle: time.Minute, maxHeaderBytes: 16 << 10}

func newHTTPServer(h http.Handler, l serverLimits) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: l.readHeader, ReadTimeout: l.read, IdleTimeout: l.idle, MaxHeaderBytes: l.maxHeaderBytes}
}

// reg returns the registry serve exposes: c, the spend budgets of its
// source (each read bounded by timeout, as c's are), and this process's
// go_* and process_* metrics.
func reg(c *metrics.Collector, timeout time.Duration) *prometheus.Registry {
	r := prometheus.NewRegistry()
	r.MustRegister(c, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if bs, ok := c.Source().(metrics.BudgetSource); ok {
		r.MustRegister(metrics.NewBudgetCollector(bs, timeout))
	}
	return r
}

// LoopbackOnly refuses a request for another host than localhost or a
// loopback IP (403), on every path: serve listens on loopback, and a
// request naming another host comes from a page of another site whose
// name was pointed at 127.0.0.1 (DNS rebinding), which could read it.
func LoopbackOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if hp, _, err := net.SplitHostPort(host); err == nil {
			host = hp
		}
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
		if ip := net.ParseIP(host); !strings.EqualFold(host, "localhost") && (ip == nil || !ip.IsLoopback()) {
			writeAPIError(w, http.StatusForbidden, fmt.Errorf("refused: this serve listens on loopback and answers for localhost or a loopback address only, not for host %q (another site's name pointed at this machine); open http://127.0.0.1:PORT/, or have a proxy send such a Host", r.Host))
			return
		}
		h.ServeHTTP(w, r)
	})
}
