//go:build !governor_noserve

package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/governor-dev/governor/internal/exitcode"
	"github.com/governor-dev/governor/internal/proctest"
	"github.com/governor-dev/governor/internal/redistest"
)

// serveProc is a `governor serve` running in-process through Main.
type serveProc struct {
	base    string // http://HOST:PORT
	done    chan int
	before  string      // stderr before serve said it listens
	stderr  chan string // the rest of stderr, once Main returned
	stopped bool
}

// startServe runs Main(args) in a goroutine and returns once serve
// listens. The test's cleanup stops it if the test did not.
func startServe(t *testing.T, args ...string) *serveProc {
	t.Helper()
	pr, pw := io.Pipe()
	p := &serveProc{done: make(chan int, 1), stderr: make(chan string, 1)}
	go func() {
		code := Main(args, strings.NewReader(""), io.Discard, pw)
		pw.Close()
		p.done <- code
	}()
	br := bufio.NewReader(pr)
	const prefix = "governor: serving project "
	var line string
	var err error
	for {
		line, err = br.ReadString('\n')
		if err != nil || strings.HasPrefix(line, prefix) {
			break
		}
		p.before += line
	}
	go func() {
		rest, _ := io.ReadAll(br)
		p.stderr <- string(rest)
	}()
	if err != nil {
		t.Fatalf("serve did not start: %q %v (exit %d)", p.before+line, err, <-p.done)
	}
	f := strings.Fields(line)
	p.base = strings.TrimSuffix(f[len(f)-1], "/metrics")
	t.Cleanup(func() {
		if !p.stopped {
			p.stop(t, syscall.SIGTERM)
		}
	})
	return p
}

// stop sends sig to this process, which serve alone is listening for,
// and returns serve's exit code and the rest of its stderr.
func (p *serveProc) stop(t *testing.T, sig syscall.Signal) (int, string) {
	t.Helper()
	p.stopped = true
	if err := syscall.Kill(os.Getpid(), sig); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-p.done:
		return code, <-p.stderr
	case <-time.After(20 * time.Second):
		t.Fatalf("serve still running 20s after %v", sig)
		return 0, ""
	}
}

func (p *serveProc) get(t *testing.T, path string) (int, string) {
	t.Helper()
	return proctest.Get(t, p.base+path)
}

// scrape returns /metrics as series ("name{labels}") to values.
func (p *serveProc) scrape(t *testing.T) map[string]float64 {
	t.Helper()
	code, body := p.get(t, "/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d\n%s", code, body)
	}
	series := map[string]float64{}
	for line := range strings.Lines(body) {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("/metrics line %q: %v", line, err)
		}
		series[line[:i]] = v
	}
	return series
}

func expectSeries(t *testing.T, when string, got map[string]float64, want map[string]float64) {
	t.Helper()
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s: %s = %v (present %v), want %v", when, k, g, ok, v)
		}
	}
}

func serveConfig(t *testing.T) string {
	return configFile(t, "project: servetest\nresources:\n  gpu:\n    limit: 3\n")
}

// serveChild runs `governor ARGS` in a child process (this test binary,
// through TestServeHelperProcess) and returns its exit code and output.
func serveChild(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestServeHelperProcess$", "--"}, args...)...)
	// Under -race a child waits a second at exit unless told not to.
	cmd.Env = append(os.Environ(), "GOVERNOR_SERVE_HELPER=1", "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatal(err)
		}
	}
	return cmd.ProcessState.ExitCode(), out.String(), errb.String()
}

// TestServeHelperProcess is the child of serveChild: the CLI in a
// process of its own.
func TestServeHelperProcess(t *testing.T) {
	if os.Getenv("GOVERNOR_SERVE_HELPER") != "1" {
		return
	}
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	os.Exit(Main(args, os.Stdin, os.Stdout, os.Stderr))
}

func serveCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// A lease taken by one CLI process and released by another, both
// finished by the time of the scrape, is seen by serve, and the counters
// of those runs stay.
//
// A scrape's backend reads have --timeout: 5 s, not 1, which a read of
// the file backend overran at load 28 ("before use: governor_up = 0").
func TestServeMetricsCoverFinishedRuns(t *testing.T) {
	t.Parallel()
	const timeout = 5 * time.Second
	check := func(t *testing.T, global []string) *serveProc {
		p := startServe(t, append(global, "serve", "--listen", "127.0.0.1:0", "--timeout", timeout.String())...)
		const gpu = `{project="servetest",resource="gpu"}`
		// Configured and never used: reported with its configured limit.
		expectSeries(t, "before use", p.scrape(t), map[string]float64{
			`governor_up{project="servetest"}`:           1,
			`governor_scrape_error{project="servetest"}`: 0,
			"governor_slots_limit" + gpu:                 3,
			"governor_slots_in_use" + gpu:                0,
		})

		code, out, errs := serveChild(t, append(global, "acquire", "gpu", "--ttl", "1m")...)
		if code != 0 {
			t.Fatalf("acquire: exit %d: %s", code, errs)
		}
		lease := strings.Fields(out)[0]
		got := p.scrape(t)
		expectSeries(t, "held", got, map[string]float64{
			"governor_slots_in_use" + gpu: 1,
			"governor_holders" + gpu:      1,
			`governor_acquires_total{outcome="acquired",project="servetest",resource="gpu"}`: 1,
		})
		for _, name := range []string{"go_goroutines", "process_start_time_seconds", `promhttp_metric_handler_requests_total{code="200"}`} {
			if _, ok := got[name]; !ok {
				t.Errorf("/metrics has no %s", name)
			}
		}
		if code, body := p.get(t, "/healthz"); code != http.StatusOK || body != "ok\n" {
			t.Errorf("/healthz: %d %q, want 200 ok", code, body)
		}

		if code, _, errs := serveChild(t, append(global, "release", lease)...); code != 0 {
			t.Fatalf("release: exit %d: %s", code, errs)
		}
		expectSeries(t, "released", p.scrape(t), map[string]float64{
			"governor_slots_in_use" + gpu: 0,
			`governor_acquires_total{outcome="acquired",project="servetest",resource="gpu"}`: 1,
			"governor_releases_total" + gpu: 1,
		})
		return p
	}
	finish := func(t *testing.T, p *serveProc, sig syscall.Signal) {
		code, rest := p.stop(t, sig)
		if code != 0 || !strings.Contains(rest, "serve stopped") {
			t.Fatalf("after %v: exit %d, stderr %q; want 0 and a graceful stop", sig, code, rest)
		}
	}

	t.Run("file", func(t *testing.T) {
		global := []string{"--backend", "file", "--dir", filepath.Join(t.TempDir(), "state"), "--config", serveConfig(t)}
		finish(t, check(t, global), syscall.SIGTERM)
	})
	t.Run("redis", func(t *testing.T) {
		s := redistest.Start(t)
		global := []string{"--backend", "redis", "--redis-url", s.URL(), "--config", serveConfig(t)}
		p := check(t, global)

		// Redis stops answering, then goes away: either way scrapes
		// still answer, with governor_up 0, and the health check fails.
		// A stopped server takes connections and never replies, so a
		// scrape answers at all only because --timeout cuts its reads
		// (not timed here: a scrape that waited on the server would
		// never answer, and the test's -timeout would end it).
		if err := s.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		redisDown(t, p, "redis stopped")
		if err := s.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		s.Stop()
		redisDown(t, p, "redis down")
		if err := s.Restart(); err != nil {
			t.Fatal(err)
		}
		// The client's pool may still refuse at once for a moment after
		// its failed dials (go-redis backs off): serve is up again by a
		// later scrape, not necessarily the first (seen: "redis back:
		// governor_up = 0" on an idle machine).
		eventually(t, 30*time.Second, "governor_up did not return to 1 after Redis came back", func() bool {
			return p.scrape(t)[`governor_up{project="servetest"}`] == 1
		})
		finish(t, p, syscall.SIGINT)
	})
}

// redisDown checks that a scrape answers with governor_up 0 and a
// scrape error, and that the health check fails. The first scrape after
// the change may join a backend read begun before it (serve runs one
// read at a time), which can still have been answered (seen: "redis
// down: governor_up = 1" when a read begun while the server was stopped
// went on after SIGCONT and listed the resources before the server was
// killed), so a later scrape may be the first to say so.
func redisDown(t *testing.T, p *serveProc, when string) {
	t.Helper()
	var got map[string]float64
	eventually(t, 30*time.Second, when+": no scrape reported governor_up 0", func() bool {
		got = p.scrape(t)
		return got[`governor_up{project="servetest"}`] == 0
	})
	expectSeries(t, when, got, map[string]float64{
		`governor_up{project="servetest"}`:           0,
		`governor_scrape_error{project="servetest"}`: 1,
	})
	if code, _ := p.get(t, "/healthz"); code != http.StatusServiceUnavailable {
		t.Errorf("/healthz, %s: %d, want 503", when, code)
	}
}

// TestServeStartsBeforeRedis: serve started while its Redis is down
// serves governor_up 0 and connects once Redis is up.
func TestServeStartsBeforeRedis(t *testing.T) {
	s := redistest.Start(t)
	s.Stop() // the port is known, nothing listens on it
	global := []string{"--backend", "redis", "--redis-url", s.URL(), "--config", serveConfig(t)}
	p := startServe(t, append(global, "serve", "--listen", "127.0.0.1:0", "--timeout", "1s")...)
	if !strings.Contains(p.before, "cannot reach Redis") || !strings.Contains(p.before, "serving anyway") {
		t.Errorf("stderr before serving: %q; want it to say Redis is unreachable and serve goes on", p.before)
	}
	redisDown(t, p, "redis not started")
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	expectSeries(t, "redis up", p.scrape(t), map[string]float64{
		`governor_up{project="servetest"}`:                         1,
		`governor_slots_limit{project="servetest",resource="gpu"}`: 3,
	})
	code, rest := p.stop(t, syscall.SIGTERM)
	if code != 0 || !strings.Contains(rest, "serve stopped") {
		t.Fatalf("exit %d, stderr %q", code, rest)
	}
}

// A file backend that cannot open is a setup error, not a wait.
func TestServeFileBackendUnusable(t *testing.T) {
	dir := t.TempDir()
	if err := os.Symlink(t.TempDir(), filepath.Join(dir, "state")); err != nil {
		t.Fatal(err)
	}
	code, _, errs := serveCLI(t, "--backend", "file", "--dir", filepath.Join(dir, "state"), "--config", serveConfig(t), "serve", "--listen", "127.0.0.1:0")
	if code != exitcode.Failure || !strings.Contains(errs, "symlink") {
		t.Fatalf("exit %d, stderr %q; want %d naming the symlink", code, errs, exitcode.Failure)
	}
}

func TestServeHelp(t *testing.T) {
	code, out, _ := serveCLI(t, "serve", "--help")
	for _, want := range []string{"at scrape time", "finished", "/healthz", DefaultListen, "governor_up"} {
		if !strings.Contains(out, want) {
			t.Errorf("serve --help lacks %q", want)
		}
	}
	if code != 0 {
		t.Errorf("exit %d", code)
	}
}

func TestServeBadInput(t *testing.T) {
	global := []string{"--backend", "file", "--dir", filepath.Join(t.TempDir(), "state"), "--config", serveConfig(t)}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--listen", "no-port"}, "--listen no-port"},
		{[]string{"serve", "--timeout", "0s"}, "--timeout"},
		{[]string{"serve", "extra"}, "unknown command"},
		{[]string{"serve", "--resources-retention", "10ms"}, "--resources-retention"},
		{[]string{"serve", "--unix", "/tmp/g.sock", "--listen", "127.0.0.1:0"}, "give one of them"},
		{[]string{"serve", "--unix", "/"}, "--unix /: exists and is not a socket"},
	} {
		code, _, errs := serveCLI(t, append(global, tc.args...)...)
		if code != exitcode.Failure || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d mentioning %q", tc.args, code, errs, exitcode.Failure, tc.want)
		}
	}
}

// serve warns when it listens where other machines can connect; the
// decision is tested on addresses, since tests listen on 127.0.0.1 only.
func TestServeWarnsBeyondLoopback(t *testing.T) {
	p := startServe(t, "--backend", "file", "--dir", filepath.Join(t.TempDir(), "state"), "--config", serveConfig(t), "serve", "--listen", "127.0.0.1:0")
	if strings.Contains(p.before, "beyond loopback") {
		t.Errorf("serve on 127.0.0.1 warned of beyond loopback: %q", p.before)
	}
	code, out, _ := serveCLI(t, "serve", "--help")
	for _, want := range []string{"disclose", "no authentication", "do not show sessions", "warns on stderr"} {
		if !strings.Contains(strings.Join(strings.Fields(out), " "), want) {
			t.Errorf("serve --help lacks %q", want)
		}
	}
	if code != 0 {
		t.Errorf("serve --help: exit %d", code)
	}
}

// serve's --resources-retention has a floor of hours (issue 24.13): with
// 1s, any backend user could erase every idle resource's events, admin
// actions included. The forgetting itself is TestSweepForgetsIdleResources
// (internal/statuspage), at the library's floor.
func TestServeRetentionFloor(t *testing.T) {
	global := []string{"--backend", "file", "--dir", filepath.Join(t.TempDir(), "state"), "--config", serveConfig(t)}
	for _, d := range []string{"1s", "59m"} {
		code, _, errs := serveCLI(t, append(global, "serve", "--listen", "127.0.0.1:0", "--resources-retention", d)...)
		if code != exitcode.Failure || !strings.Contains(errs, "--resources-retention: ") || !strings.Contains(errs, "1h0m0s or more") || !strings.Contains(errs, "admin actions") {
			t.Errorf("serve --resources-retention %s: exit %d, stderr %q; want %d naming the floor and why", d, code, errs, exitcode.Failure)
		}
	}
	p := startServe(t, append(global, "serve", "--listen", "127.0.0.1:0", "--resources-retention", "1h")...)
	if _, ok := p.scrape(t)[`governor_slots_limit{project="servetest",resource="gpu"}`]; !ok {
		t.Fatal("serve with --resources-retention 1h does not serve")
	}
}
