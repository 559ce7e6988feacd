package statuspage

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/leasetest"
	"github.com/governor-dev/governor/metrics"
)

// source is a Reopening over a file backend in a temporary directory,
// with one resource "gpu" holding a lease.
func source(t *testing.T) *Reopening {
	t.Helper()
	g := leasetest.FileGovernor(t, t.TempDir(), governor.Options{Project: "prj"})
	l, err := g.Acquire(context.Background(), "gpu", governor.AcquireOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Release() })
	return NewReopening("prj", func(context.Context) (*governor.Governor, error) { return g, nil })
}

// serveHandler is what serve serves for o (o.Source set), on a loopback
// listener when loop.
func serveHandler(t *testing.T, o Options, loop bool) http.Handler {
	t.Helper()
	if o.Source == nil {
		o.Source = source(t)
	}
	if o.Timeout == 0 {
		o.Timeout = 5 * time.Second
	}
	c, err := metrics.NewCollector(o.Source, metrics.CollectorOptions{Timeout: o.Timeout})
	if err != nil {
		t.Fatal(err)
	}
	return handler(o, c, NewHistory(nil), loop)
}

// On loopback, every path answers only for a loopback Host: /metrics and
// /healthz too, with and without the page.
func TestLoopbackHostOnEveryPath(t *testing.T) {
	for _, page := range []bool{true, false} {
		h := serveHandler(t, Options{Page: page, Token: "tok-0123456789abcdef"}, true)
		paths := []string{"/metrics", "/healthz"}
		if page {
			paths = append(paths, "/", "/app.js", "/style.css", "/api/v1/info", "/api/v1/slots", "/api/v1/events", "/api/v1/pause", "/nosuch")
		}
		for _, p := range paths {
			for host, want := range map[string]bool{"evil.example": false, "evil.example:9464": false, "127.0.0.1:9464": true, "localhost": true, "[::1]:9464": true} {
				req, err := http.NewRequest(http.MethodGet, "http://"+host+p, nil)
				if err != nil {
					t.Fatal(err)
				}
				req.Host = host
				rec := &recorder{header: http.Header{}}
				h.ServeHTTP(rec, req)
				if got := rec.code != http.StatusForbidden; got != want {
					t.Errorf("page %v: GET %s for Host %s: %d; want it answered %v", page, p, host, rec.code, want)
				}
			}
		}
	}
}

// testServer serves h with limits l on 127.0.0.1.
func testServer(t *testing.T, h http.Handler, l serverLimits) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := newHTTPServer(h, l)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// closedBy reads c until the server closes it, and reports whether it
// did before deadline (generous: the server's limits are far shorter).
func closedBy(c net.Conn, deadline time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(deadline))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

// A client that trickles its headers, or its body, is cut off: it does
// not hold a connection (and its memory) for as long as it likes.
func TestSlowClientCutOff(t *testing.T) {
	if defaultLimits.readHeader <= 0 || defaultLimits.read <= 0 || defaultLimits.idle <= 0 || defaultLimits.maxHeaderBytes <= 0 {
		t.Fatalf("serve's limits have a zero (no limit): %+v", defaultLimits)
	}
	addr := testServer(t, serveHandler(t, Options{Page: true}, true), serverLimits{readHeader: 200 * time.Millisecond, read: 300 * time.Millisecond, idle: time.Second, maxHeaderBytes: 4 << 10})
	for name, send := range map[string]string{
		"headers": "GET /api/v1/info HTTP/1.1\r\nHost: 127.0.0.1\r\n",
		"body":    "POST /api/v1/info HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\nabc",
	} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(c, send); err != nil {
			t.Fatal(err)
		}
		if !closedBy(c, 30*time.Second) {
			t.Errorf("a client trickling its %s was not cut off in 30s", name)
		}
		c.Close()
	}
}

// Headers beyond the cap are refused (431), not buffered.
func TestHeaderCap(t *testing.T) {
	addr := testServer(t, serveHandler(t, Options{Page: true}, true), serverLimits{readHeader: 5 * time.Second, read: 5 * time.Second, idle: time.Second, maxHeaderBytes: 4 << 10})
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/healthz", nil)
	req.Header.Set("X-Big", strings.Repeat("a", 64<<10))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("64 KiB of headers: %d; want 431", resp.StatusCode)
	}
}

// ?resource= named twice is read and shown once, in slots and events.
func TestRepeatedResourceOnce(t *testing.T) {
	h := serveHandler(t, Options{Page: true}, true)
	rec := &recorder{header: http.Header{}}
	req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1/api/v1/slots?resource=gpu&resource=gpu", nil)
	h.ServeHTTP(rec, req)
	if n := strings.Count(rec.body.String(), `"resource": "gpu"`); rec.code != http.StatusOK || n != 1 {
		t.Errorf("slots?resource=gpu&resource=gpu: %d, gpu %d times; want 200, once:\n%s", rec.code, n, rec.body.String())
	}
}

// serveUnix runs Serve on a unix socket at path until the test ends,
// and waits for the socket.
func serveUnix(t *testing.T, path string) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var stderr bytes.Buffer
	go func() {
		done <- Serve(ctx, Options{Unix: path, Timeout: 5 * time.Second, Retention: governor.DefaultRetention, Page: true, Source: source(t), Stderr: &syncWriter{w: &stderr}})
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if c, err := net.Dial("unix", path); err == nil {
			c.Close()
			break
		}
		select {
		case err := <-done:
			t.Fatalf("serve --unix %s: %v", path, err)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no socket at %s after 30s", path)
		}
	}
	return func() error { cancel(); return <-done }
}

type syncWriter struct{ w io.Writer }

func (s *syncWriter) Write(b []byte) (int, error) { return s.w.Write(b) }

// serve --unix: a socket only its owner can open (0600), answering
// whatever the Host; removed when serve stops.
func TestServeUnixSocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "g.sock")
	stop := serveUnix(t, path)
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Type() != fs.ModeSocket || fi.Mode().Perm() != 0o600 {
		t.Errorf("%s: mode %v; want a socket, 0600", path, fi.Mode())
	}
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprint(c, "GET /healthz HTTP/1.1\r\nHost: any.example\r\nConnection: close\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	c.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /healthz over the socket: %d; want 200", resp.StatusCode)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after serve stopped, %s: %v; want it removed", path, err)
	}
}

// An existing path: a file is refused and left alone; a live socket is
// refused; a stale socket of ours (a killed serve's) is replaced.
func TestServeUnixExistingPath(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := Serve(context.Background(), Options{Unix: file, Timeout: time.Second, Page: true, Source: source(t), Stderr: io.Discard})
	if err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("--unix on a regular file: %v; want refused as not a socket", err)
	}
	if b, _ := os.ReadFile(file); string(b) != "keep" {
		t.Errorf("the file was changed: %q", b)
	}

	live := filepath.Join(dir, "live.sock")
	stop := serveUnix(t, live)
	defer stop()
	err = Serve(context.Background(), Options{Unix: live, Timeout: time.Second, Page: true, Source: source(t), Stderr: io.Discard})
	if err == nil || !strings.Contains(err.Error(), "another process listens") {
		t.Errorf("--unix on a live socket: %v; want refused", err)
	}

	stale := filepath.Join(dir, "stale.sock")
	ln, err := net.Listen("unix", stale)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close() // as a killed serve leaves it
	if err := serveUnix(t, stale)(); err != nil {
		t.Errorf("--unix on a stale socket: %v; want it replaced", err)
	}
}

// Sweep forgets a resource that stayed idle for the retention, and keeps
// one that is held; used again, the forgotten one starts afresh.
func TestSweepForgetsIdleResources(t *testing.T) {
	src := source(t) // gpu: held throughout
	ctx, cancel := context.WithCancel(context.Background())
	g, err := src.Governor(ctx)
	if err != nil {
		t.Fatal(err)
	}
	use := func() {
		t.Helper()
		l, err := g.Acquire(ctx, "issue:9", governor.AcquireOptions{Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(); err != nil {
			t.Fatal(err)
		}
	}
	use()
	done := make(chan struct{})
	go func() { src.Sweep(ctx, governor.MinRetention, time.Second, io.Discard); close(done) }()
	defer func() { cancel(); <-done }()
	has := func(name string) bool {
		rs, err := src.Resources(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return slices.Contains(rs, name)
	}
	deadline := time.Now().Add(30 * time.Second)
	for has("issue:9") {
		if time.Now().After(deadline) {
			t.Fatalf("issue:9 still listed 30s after its last use with a retention of %v", governor.MinRetention)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !has("gpu") {
		t.Fatal("the held resource gpu was forgotten")
	}
	use()
	if st, err := src.Status(ctx, "issue:9"); err != nil || st.Counters.Acquired != 1 {
		t.Fatalf("used again: %+v, %v; want a fresh resource with one grant", st.Counters, err)
	}
}
