//go:build !governor_noserve

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/eventkind"
	"github.com/governor-dev/governor/internal/exitcode"
	"github.com/governor-dev/governor/internal/proctest"
	"github.com/governor-dev/governor/internal/statuspage"
	"github.com/governor-dev/governor/internal/view"
)

// fakeAdmin records the actions it is asked for, and answers err.
type fakeAdmin struct {
	mu    sync.Mutex
	calls []string
	err   error
}

func (f *fakeAdmin) record(format string, args ...any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
	return f.err
}

func (f *fakeAdmin) Cancel(ctx context.Context, resource string, sel governor.CancelSelector, by string) ([]governor.Waiter, error) {
	if err := f.record("cancel %s waiter=%s session=%s by %s", resource, sel.WaiterID, sel.Session, by); err != nil {
		return nil, err
	}
	return []governor.Waiter{{ID: "w-1"}, {ID: "w-2"}}, nil
}

func (f *fakeAdmin) Pause(ctx context.Context, resource, by string) error {
	return f.record("pause %s by %s", resource, by)
}

func (f *fakeAdmin) Resume(ctx context.Context, resource, by string) error {
	return f.record("resume %s by %s", resource, by)
}

func (f *fakeAdmin) SetLimit(ctx context.Context, resource string, limit int, by string) error {
	return f.record("limit %s %d by %s", resource, limit, by)
}

func (f *fakeAdmin) took() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.calls
	f.calls = nil
	return out
}

const testToken = "test-admin-token-0123456789"

// pageServer serves the status page of a file backend with admin (nil:
// read-only) on 127.0.0.1.
func pageServer(t *testing.T, admin statuspage.Admin) *httptest.Server {
	t.Helper()
	return pageServerWrapped(t, admin, func(h http.Handler) http.Handler { return h })
}

// pageServerWrapped is pageServer with its handler wrapped by wrap.
func pageServerWrapped(t *testing.T, admin statuspage.Admin, wrap func(http.Handler) http.Handler) *httptest.Server {
	t.Helper()
	return pageServerIn(t, filepath.Join(t.TempDir(), "state"), admin, wrap)
}

// pageServerIn is pageServerWrapped on the file backend's state in dir.
func pageServerIn(t *testing.T, dir string, admin statuspage.Admin, wrap func(http.Handler) http.Handler) *httptest.Server {
	t.Helper()
	a := &app{backend: "file", dir: dir, configFile: serveConfig(t), env: os.Environ()}
	g, err := a.open(context.Background(), openOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	l, err := a.load()
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	statuspage.NewPage(g, statuspage.PageOptions{Timeout: 5 * time.Second, Limits: l.Config.Limits(), Locks: l.Config.MkdirLocks(),
		Version: version(), Admin: admin, Token: testToken}).Register(mux)
	s := httptest.NewServer(statuspage.LoopbackOnly(wrap(mux))) // as serve on 127.0.0.1
	t.Cleanup(s.Close)
	return s
}

// post sends an action as the page does, with changes made by edit.
func post(t *testing.T, base, path, body string, edit func(*http.Request)) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Origin", base)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	if edit != nil {
		edit(req)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &out); err != nil && resp.StatusCode != http.StatusNotFound {
		t.Fatalf("POST %s: %d, body %q is not a JSON object: %v", path, resp.StatusCode, b, err)
	}
	return resp.StatusCode, out
}

// Each action is done only for a same-origin (or non-browser) POST with
// the token and a valid JSON body; every refusal leaves the backend
// untouched and says why; who acted is the client's address.
func TestStatusPageActionRules(t *testing.T) {
	admin := &fakeAdmin{}
	s := pageServer(t, admin)
	for _, tc := range []struct {
		name, path, body string
		edit             func(*http.Request)
		code             int
		errs             string // in the error; "" on success
		call             string // the call made, with "BY" for who; "" none
	}{
		{"pause", "/api/v1/pause", `{"resource":"gpu"}`, nil, 200, "", "pause gpu by BY"},
		{"resume", "/api/v1/resume", `{"resource":"gpu"}`, nil, 200, "", "resume gpu by BY"},
		{"limit", "/api/v1/limit", `{"resource":"gpu","limit":5}`, nil, 200, "", "limit gpu 5 by BY"},
		{"limit cleared", "/api/v1/limit", `{"resource":"gpu","limit":0}`, nil, 200, "", "limit gpu 0 by BY"},
		{"cancel a waiter", "/api/v1/cancel", `{"resource":"gpu","waiter":"w-1"}`, nil, 200, "", "cancel gpu waiter=w-1 session= by BY"},
		{"cancel a session", "/api/v1/cancel", `{"resource":"gpu","session":"s1"}`, nil, 200, "", "cancel gpu waiter= session=s1 by BY"},
		{"not a browser", "/api/v1/pause", `{"resource":"gpu"}`, func(r *http.Request) { r.Header.Del("Origin"); r.Header.Del("Sec-Fetch-Site") }, 200, "", "pause gpu by BY"},

		{"no token", "/api/v1/pause", `{"resource":"gpu"}`, func(r *http.Request) { r.Header.Del("Authorization") }, 401, "admin token is missing or wrong", ""},
		{"wrong token", "/api/v1/pause", `{"resource":"gpu"}`, func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+testToken+"x") }, 401, "admin token is missing or wrong", ""},
		{"token not bearer", "/api/v1/pause", `{"resource":"gpu"}`, func(r *http.Request) { r.Header.Set("Authorization", testToken) }, 401, "Authorization: Bearer TOKEN", ""},
		{"token in a cookie", "/api/v1/pause", `{"resource":"gpu"}`, func(r *http.Request) {
			r.Header.Del("Authorization")
			r.AddCookie(&http.Cookie{Name: "token", Value: testToken})
		}, 401, "missing or wrong", ""},
		{"cross-site", "/api/v1/pause", `{"resource":"gpu"}`, func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "cross-site") }, 403, "cross-origin", ""},
		{"other origin, old browser", "/api/v1/pause", `{"resource":"gpu"}`, func(r *http.Request) {
			r.Header.Del("Sec-Fetch-Site")
			r.Header.Set("Origin", "http://evil.example")
		}, 403, "http://evil.example", ""},
		{"a form's content type", "/api/v1/pause", `{"resource":"gpu"}`, func(r *http.Request) { r.Header.Set("Content-Type", "text/plain") }, 415, "application/json", ""},
		{"not JSON", "/api/v1/pause", `resource=gpu`, nil, 400, "not an action", ""},
		{"unknown field", "/api/v1/pause", `{"resource":"gpu","force":true}`, nil, 400, `"force"`, ""},
		{"bad name", "/api/v1/pause", `{"resource":"a b"}`, nil, 400, `"a b"`, ""},
		{"no resource", "/api/v1/pause", `{}`, nil, 400, "resource", ""},
		{"limit for pause", "/api/v1/pause", `{"resource":"gpu","limit":2}`, nil, 400, "belongs to /api/v1/limit", ""},
		{"no limit", "/api/v1/limit", `{"resource":"gpu"}`, nil, 400, "no limit", ""},
		{"cancel what", "/api/v1/cancel", `{"resource":"gpu"}`, nil, 400, "give one of", ""},
		{"cancel both", "/api/v1/cancel", `{"resource":"gpu","waiter":"w","session":"s"}`, nil, 400, "give one of", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out := post(t, s.URL, tc.path, tc.body, tc.edit)
			calls := admin.took()
			if code != tc.code {
				t.Fatalf("%d %v; want %d", code, out, tc.code)
			}
			if tc.errs != "" {
				if e, _ := out["error"].(string); !strings.Contains(e, tc.errs) {
					t.Errorf("error %q lacks %q", e, tc.errs)
				}
				if len(calls) != 0 {
					t.Errorf("refused, yet the backend was asked: %q", calls)
				}
				return
			}
			if len(calls) != 1 || !strings.HasPrefix(calls[0], strings.TrimSuffix(tc.call, "BY")+"serve admin from 127.0.0.1:") {
				t.Fatalf("calls %q; want one %q, by serve admin from 127.0.0.1:PORT", calls, tc.call)
			}
			if out["by"] != strings.TrimPrefix(calls[0], strings.TrimSuffix(tc.call, "BY")) {
				t.Errorf("answer's by %v; the call's %q", out["by"], calls[0])
			}
		})
	}
	code, out := post(t, s.URL, "/api/v1/cancel", `{"resource":"gpu","session":"s1"}`, nil)
	admin.took()
	if code != 200 || !reflect.DeepEqual(out["cancelled"], []any{"w-1", "w-2"}) {
		t.Errorf("cancel: %d %v; want the cancelled waiters' ids", code, out)
	}

	// The library's refusals: bad input is 400, anything else 503.
	for err, want := range map[error]int{
		fmt.Errorf("%w: limit 0 for gpu; allowed: 1 to 1000000", governor.ErrInvalid): 400,
		errors.New("cannot reach Redis"):                                              503,
	} {
		admin.err = err
		if code, out := post(t, s.URL, "/api/v1/pause", `{"resource":"gpu"}`, nil); code != want || !strings.Contains(out["error"].(string), strings.TrimPrefix(err.Error(), "governor: ")) {
			t.Errorf("library error %v: %d %v; want %d with its message", err, code, out, want)
		}
		admin.took()
	}

	// Reading an action is not acting.
	resp, err := http.Get(s.URL + "/api/v1/pause")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || len(admin.took()) != 0 {
		t.Errorf("GET /api/v1/pause: %d; want 405 and nothing done", resp.StatusCode)
	}
}

// Without an admin the actions do not exist, and the page says so.
func TestStatusPageReadOnly(t *testing.T) {
	s := pageServer(t, nil)
	for _, path := range []string{"/api/v1/pause", "/api/v1/resume", "/api/v1/limit", "/api/v1/cancel"} {
		if code, _ := post(t, s.URL, path, `{"resource":"gpu"}`, nil); code != http.StatusNotFound {
			t.Errorf("POST %s on a read-only page: %d; want 404", path, code)
		}
	}
	var info statuspage.Info
	getJSON(t, s.URL+"/api/v1/info", 200, &info)
	if info.Actions || info.Project != "servetest" {
		t.Errorf("info %+v; want project servetest, no actions", info)
	}
}

func getJSON(t *testing.T, url string, code int, v any) http.Header {
	t.Helper()
	resp, b := proctest.Fetch(t, url)
	if resp.StatusCode != code {
		t.Fatalf("GET %s: %d %s; want %d", url, resp.StatusCode, b, code)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: %q: %v", url, b, err)
	}
	return resp.Header
}

// The page is whole in the binary and asks the browser to load nothing
// from elsewhere.
func TestStatusPageFiles(t *testing.T) {
	s := pageServer(t, nil)
	for path, ctype := range map[string]string{"/": "text/html", "/app.js": "text/javascript", "/style.css": "text/css"} {
		resp, b := proctest.Fetch(t, s.URL+path)
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), ctype) {
			t.Errorf("GET %s: %d %s; want 200 %s", path, resp.StatusCode, resp.Header.Get("Content-Type"), ctype)
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "connect-src 'self'") {
			t.Errorf("GET %s: Content-Security-Policy %q", path, csp)
		}
		for _, ext := range []string{"http://", "https://", "//cdn", "@import"} {
			if strings.Contains(string(b), ext) {
				t.Errorf("%s refers to %q: the page must load nothing from elsewhere", path, ext)
			}
		}
	}
}

// /api/v1/slots and /api/v1/events answer what 'slots --json' and
// 'events --json' print: the same builders, the same bytes but for the
// ages, which move between the two reads.
func TestStatusPageAPIIsTheCLIs(t *testing.T) {
	global := []string{"--backend", "file", "--dir", filepath.Join(t.TempDir(), "state"), "--config", serveConfig(t)}
	p := startServe(t, append(global, "serve", "--listen", "127.0.0.1:0", "--timeout", "5s")...)
	for _, want := range []string{"status page (read-only) on " + p.base + "/"} {
		if !strings.Contains(p.before, want) {
			t.Errorf("serve's stderr %q lacks %q", p.before, want)
		}
	}
	code, out, errs := serveCLI(t, append(global, "acquire", "gpu", "--ttl", "1m", "--session", "holder-1", "--weight", "3")...)
	if code != 0 {
		t.Fatalf("acquire: exit %d: %s", code, errs)
	}
	lease := strings.Fields(out)[0]
	w := startWaiter(t, append(global, "acquire", "gpu", "--wait-timeout", "2m", "--ttl", "1m", "--session", "waiter-1")...)
	waitFor(t, "the waiter queued", func() bool {
		if w.exited() >= 0 {
			t.Fatalf("the waiter ended: exit %d, %s", w.exited(), w.errb.String())
		}
		var s view.Slots
		getJSON(t, p.base+"/api/v1/slots?resource=gpu", 200, &s)
		return len(s.Resources) == 1 && len(s.Resources[0].Waiters) == 1
	})
	same := func(path string, args ...string) {
		t.Helper()
		code, cliOut, errs := serveCLI(t, append(global, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
		var api, cli any
		getJSON(t, p.base+path, 200, &api)
		if err := json.Unmarshal([]byte(cliOut), &cli); err != nil {
			t.Fatal(err)
		}
		if a, c := dropAges(api), dropAges(cli); !reflect.DeepEqual(a, c) {
			t.Errorf("%s differs from %v:\napi %v\ncli %v", path, args, a, c)
		}
	}
	same("/api/v1/slots", "slots", "--json")
	same("/api/v1/slots?resource=gpu", "slots", "gpu", "--json")
	// A takeover is an event.
	if code, _, errs := serveCLI(t, append(global, "takeover", "gpu", "--lease", strings.SplitN(strings.TrimPrefix(lease, "gpu@"), ".", 2)[0], "--force")...); code != 0 {
		t.Fatalf("takeover: exit %d: %s", code, errs)
	}
	same("/api/v1/events", "events", "--json")
	same("/api/v1/events?since=1h", "events", "--json", "--since", "1h")
	var evs []view.Event
	getJSON(t, p.base+"/api/v1/events", 200, &evs)
	if len(evs) == 0 || evs[len(evs)-1].Kind != eventkind.Takeover {
		t.Errorf("events %+v; want the takeover last", evs)
	}

	var e statuspage.APIError
	getJSON(t, p.base+"/api/v1/slots?resource=gpux", 404, &e)
	if !strings.Contains(e.Error, `"gpux" is unknown`) || !strings.Contains(e.Error, "did you mean gpu") {
		t.Errorf("unknown resource: %q", e.Error)
	}
	getJSON(t, p.base+"/api/v1/events?since=yesterday", 400, &e)
	if !strings.Contains(e.Error, `since="yesterday"`) {
		t.Errorf("bad since: %q", e.Error)
	}
	// serve on loopback answers for loopback hosts only.
	req, _ := http.NewRequest(http.MethodGet, p.base+"/api/v1/slots", nil)
	req.Host = "rebound.example"
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("serve on 127.0.0.1, GET for host rebound.example: %v %v; want 403", resp, err)
	} else {
		resp.Body.Close()
	}
	w.stop(t)
}

// dropAges removes the fields that say how long ago something was, and
// blurs the times: they move between two reads (the file backend keeps
// ages, and rebuilds times from them).
func dropAges(v any) any {
	switch v := v.(type) {
	case string:
		if _, err := time.Parse(time.RFC3339Nano, v); err == nil {
			return "TIME"
		}
	case map[string]any:
		out := map[string]any{}
		for k, x := range v {
			if !strings.HasSuffix(k, "_seconds") {
				out[k] = dropAges(x)
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = dropAges(x)
		}
		return out
	}
	return v
}

// waitFor polls cond every 50ms until it holds, failing after a generous
// deadline: it waits for a state, it does not time anything.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 60s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// childProc is a 'governor' CLI running in a child process.
type childProc struct {
	cmd  *exec.Cmd
	done chan struct{}
	out  strings.Builder
	errb strings.Builder
}

// startWaiter starts 'governor ARGS' in a child process (this test
// binary, through TestServeHelperProcess) without waiting for it; the
// test's cleanup kills it if it still runs.
func startWaiter(t *testing.T, args ...string) *childProc {
	t.Helper()
	c := &childProc{done: make(chan struct{})}
	c.cmd = exec.Command(os.Args[0], append([]string{"-test.run=^TestServeHelperProcess$", "--"}, args...)...)
	c.cmd.Env = append(os.Environ(), "GOVERNOR_SERVE_HELPER=1", "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	c.cmd.Stdout, c.cmd.Stderr = &c.out, &c.errb
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = c.cmd.Wait()
		close(c.done)
	}()
	t.Cleanup(func() { c.stop(t) })
	return c
}

// exited returns the child's exit code once it ended, or -1 while it
// runs.
func (c *childProc) exited() int {
	select {
	case <-c.done:
		return c.cmd.ProcessState.ExitCode()
	default:
		return -1
	}
}

// wait waits for the child to end and returns its exit code and stderr.
func (c *childProc) wait(t *testing.T) (int, string) {
	t.Helper()
	select {
	case <-c.done:
		return c.cmd.ProcessState.ExitCode(), c.errb.String()
	case <-time.After(60 * time.Second):
		t.Fatalf("%v still running after 60s", c.cmd.Args)
		return 0, ""
	}
}

func (c *childProc) stop(t *testing.T) {
	select {
	case <-c.done:
	default:
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}

// --admin-token-file is read as a credential: refused, naming the fix,
// unless its owner alone can read it; and it needs the page.
func TestServeAdminTokenFileRefused(t *testing.T) {
	global := []string{"--backend", "file", "--dir", filepath.Join(t.TempDir(), "state"), "--config", serveConfig(t)}
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good", testToken+"\n", 0o600)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--admin-token-file", write("shared", testToken, 0o640)}, "chmod 600"},
		{[]string{"--admin-token-file", write("short", "abc", 0o600)}, "at least 16"},
		{[]string{"--admin-token-file", filepath.Join(dir, "missing")}, "missing"},
		{[]string{"--admin-token-file", good, "--page=false"}, "cannot go with --page=false"},
	} {
		code, _, errs := serveCLI(t, append(append(global, "serve", "--listen", "127.0.0.1:0"), tc.args...)...)
		if code != exitcode.Failure || !strings.Contains(errs, "--admin-token-file") || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d naming --admin-token-file and %q", tc.args, code, errs, exitcode.Failure, tc.want)
		}
	}
}

// --page=false serves /metrics and /healthz alone: nothing that shows
// sessions or commands.
func TestServeWithoutPage(t *testing.T) {
	p := startServe(t, "--backend", "file", "--dir", filepath.Join(t.TempDir(), "state"), "--config", serveConfig(t), "serve", "--listen", "127.0.0.1:0", "--page=false")
	if code, _ := p.get(t, "/api/v1/slots"); code != http.StatusNotFound {
		t.Errorf("/api/v1/slots with --page=false: %d; want 404", code)
	}
	if code, body := p.get(t, "/"); code != 200 || strings.Contains(body, "app.js") {
		t.Errorf("/ with --page=false: %d %q; want metrics' own index", code, body)
	}
	if code, _ := p.get(t, "/healthz"); code != 200 {
		t.Errorf("/healthz: %d", code)
	}
}

// serve --help says what the page and the API serve, and the rule an
// action must pass.
func TestServeHelpStatusPage(t *testing.T) {
	code, out, _ := serveCLI(t, "serve", "--help")
	out = strings.Join(strings.Fields(out), " ")
	for _, want := range []string{"/api/v1/slots", "'governor slots --json'", "/api/v1/events", "--admin-token-file",
		"chmod 600", "Sec-Fetch-Site", "Origin header", "Authorization: Bearer TOKEN", "never a cookie", "application/json",
		"serve admin from ADDRESS:PORT", "the action URLs do not exist (404)", "--page=false", "without TLS"} {
		if !strings.Contains(out, want) {
			t.Errorf("serve --help lacks %q", want)
		}
	}
	if code != 0 {
		t.Errorf("exit %d", code)
	}
}

// On loopback, the page and the API answer only for a loopback host: a
// site that points its own name at 127.0.0.1 (DNS rebinding) reads
// nothing, nor acts.
func TestStatusPageRefusesOtherHosts(t *testing.T) {
	admin := &fakeAdmin{}
	s := pageServer(t, admin)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(s.URL, "http://"))
	for host, want := range map[string]int{
		"127.0.0.1:" + port:      200,
		"localhost:" + port:      200,
		"LOCALHOST":              200,
		"[::1]:" + port:          200,
		"127.0.0.2":              200,
		"evil.example:" + port:   403,
		"evil.example":           403,
		"192.168.1.10:" + port:   403,
		"localhost.evil.example": 403,
	} {
		for _, path := range []string{"/", "/api/v1/slots", "/app.js"} {
			req, _ := http.NewRequest(http.MethodGet, s.URL+path, nil)
			req.Host = host
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Errorf("GET %s for host %s: %d; want %d", path, host, resp.StatusCode, want)
			}
			if want == 403 && !strings.Contains(string(b), "loopback") {
				t.Errorf("GET %s for host %s: %s; want the reason", path, host, b)
			}
		}
		code, _ := post(t, s.URL, "/api/v1/pause", `{"resource":"gpu"}`, func(r *http.Request) {
			r.Host = host
			r.Header.Set("Origin", "http://"+host)
		})
		if calls := admin.took(); want == 403 && (code != 403 || len(calls) != 0) {
			t.Errorf("pause for host %s: %d, %q; want 403 and nothing done", host, code, calls)
		}
	}
}

// The actions of a live serve reach the library: a pause shows in
// /api/v1/slots naming the admin, the library's refusals keep their
// status (bad limit 400, no such waiter 404), and resume undoes it.
func TestServeActionsLive(t *testing.T) {
	global := []string{"--backend", "file", "--dir", filepath.Join(t.TempDir(), "state"), "--config", serveConfig(t)}
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte(testToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startServe(t, append(global, "serve", "--listen", "127.0.0.1:0", "--admin-token-file", token)...)
	if !strings.Contains(p.before, "status page (with actions) on "+p.base+"/") {
		t.Errorf("serve's stderr %q does not say the page has actions", p.before)
	}
	gpu := func() view.Resource {
		t.Helper()
		var s view.Slots
		getJSON(t, p.base+"/api/v1/slots?resource=gpu", 200, &s)
		return s.Resources[0]
	}
	if code, out := post(t, p.base, "/api/v1/pause", `{"resource":"gpu"}`, nil); code != 200 {
		t.Fatalf("pause: %d %v", code, out)
	}
	// The actor is serve's own user, session and pid, labelled with the
	// client's address.
	if r := gpu(); r.Paused == nil || !strings.Contains(r.Paused.By, `as "serve admin from 127.0.0.1:`) {
		t.Errorf("after pause, gpu: %+v; want paused as serve admin from 127.0.0.1:PORT", r.Paused)
	}
	for _, tc := range []struct {
		path, body string
		code       int
		errs       string
	}{
		{"/api/v1/limit", `{"resource":"gpu","limit":-1}`, 400, "limit -1"},
		{"/api/v1/cancel", `{"resource":"gpu","waiter":"0123456789abcdef"}`, 404, "0123456789abcdef"},
		{"/api/v1/pause", `{"resource":"gpu"}`, 401, "admin token"},
	} {
		edit := func(r *http.Request) {}
		if tc.code == 401 {
			edit = func(r *http.Request) { r.Header.Del("Authorization") }
		}
		code, out := post(t, p.base, tc.path, tc.body, edit)
		if e, _ := out["error"].(string); code != tc.code || !strings.Contains(e, tc.errs) {
			t.Errorf("POST %s %s: %d %v; want %d naming %q", tc.path, tc.body, code, out, tc.code, tc.errs)
		}
	}
	if code, out := post(t, p.base, "/api/v1/resume", `{"resource":"gpu"}`, nil); code != 200 {
		t.Fatalf("resume: %d %v", code, out)
	}
	if r := gpu(); r.Paused != nil {
		t.Errorf("after resume, gpu still paused: %+v", r.Paused)
	}
}
