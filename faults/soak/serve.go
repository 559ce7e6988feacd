//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/governor-dev/governor/internal/redistest"
)

// serveLoop keeps a `governor serve` running (a fault may kill it) until
// ctx ends, its page, API and /metrics read every 2 s. The quiet phase
// starts its own (quietServe).
func (s *soak) serveLoop(ctx context.Context) {
	if s.port == 0 {
		p, err := redistest.FreePort()
		if err != nil {
			s.violate("start", "serve: no free port: %v", err)
			return
		}
		s.port = p
	}
	for ctx.Err() == nil {
		c := s.gov(context.Background(), "serve", "--listen", "127.0.0.1:"+strconv.Itoa(s.port), "--resources-retention", "1h")
		var stderr bytes.Buffer
		c.Stderr = &stderr
		if err := start(c); err != nil {
			s.violate("start", "serve: %v", err)
			return
		}
		done := make(chan error, 1)
		go func() { done <- c.Wait() }()
		s.track(c.Process.Pid, "serve")
		var err error
	poll:
		for {
			select {
			case err = <-done:
				break poll
			case <-ctx.Done():
				_ = c.Process.Signal(interruptSig)
				err = <-done
				break poll
			case <-time.After(2 * time.Second):
				s.pollServe()
			}
		}
		s.untrack(c.Process.Pid)
		if ctx.Err() == nil {
			s.exitOf("serve", c, err, stderr.String())
			sleepCtx(ctx, time.Second)
		}
	}
}

// pollServe reads the page, the slots API and /metrics once; a 503
// (the backend does not answer: a fault) is counted, a 5xx other than
// it or a page without its parts is a violation.
func (s *soak) pollServe() {
	base := "http://127.0.0.1:" + strconv.Itoa(s.port)
	cl := http.Client{Timeout: 10 * time.Second}
	for _, path := range []string{"/", "/api/v1/slots", "/metrics", "/healthz"} {
		resp, err := cl.Get(base + path)
		if err != nil {
			s.op("serve poll: no answer (starting, or killed)")
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		s.op(fmt.Sprintf("serve GET %s %d", path, resp.StatusCode))
		switch {
		case resp.StatusCode == 503:
		case resp.StatusCode != 200:
			s.violate("serve", "GET %s: %d %s", path, resp.StatusCode, tail(string(b)))
		case path == "/metrics" && !strings.Contains(string(b), "governor_"):
			s.violate("serve", "GET /metrics: no governor_ metric in %s", tail(string(b)))
		}
	}
}
