package bridge_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/governor-dev/governor/config"
	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/filebackend"
	"github.com/governor-dev/governor/governor/proc"
	"github.com/governor-dev/governor/governor/redisbackend"
	"github.com/governor-dev/governor/internal/bridge"
	"github.com/governor-dev/governor/internal/redistest"
)

// deadline bounds every wait for a message: generous, nothing waits this
// long when things work.
const deadline = 60 * time.Second

// store opens a backend on one shared store, for every bridge of a test.
type store func(t testing.TB) governor.Backend

func fileStore(t testing.TB) store {
	dir := t.TempDir()
	return func(t testing.TB) governor.Backend {
		b, err := filebackend.New(dir, filebackend.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
}

func redisStore(t testing.TB) store {
	srv := redistest.Start(t)
	return func(t testing.TB) governor.Backend {
		rdb, err := redisbackend.NewClient("redis://" + srv.Addr)
		if err != nil {
			t.Fatal(err)
		}
		b, err := redisbackend.New(context.Background(), rdb, redisbackend.OwnClient())
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
}

// client is one bridge served over pipes, and its reader.
type client struct {
	t      testing.TB
	in     io.WriteCloser
	msgs   chan map[string]any
	done   chan error
	nextID int
	// early holds the messages read while looking for another: a reply
	// may come before the event or reply looked for first (a cancelled
	// wait's reply before cancel_request's), and is not lost.
	early []map[string]any
}

func start(t testing.TB, st store) *client {
	t.Helper()
	inR, inW := io.Pipe()
	return startOn(t, st, inR, inW)
}

// startOn serves a bridge reading its requests from inR, which the
// client writes to inW.
func startOn(t testing.TB, st store, inR io.Reader, inW io.WriteCloser) *client {
	t.Helper()
	return startWith(t, st, emptyCatalog(t), inR, inW)
}

// startWith serves a bridge of catalog cat.
func startWith(t testing.TB, st store, cat *config.Catalog, inR io.Reader, inW io.WriteCloser) *client {
	t.Helper()
	return startWrapped(t, st, cat, inR, inW, nil)
}

// startWrapped is startWith, each acquire's Held passed through wrap
// (nil: as it is).
func startWrapped(t testing.TB, st store, cat *config.Catalog, inR io.Reader, inW io.WriteCloser, wrap func(bridge.Held) bridge.Held) *client {
	t.Helper()
	outR, outW := io.Pipe()
	c := &client{t: t, in: inW, msgs: make(chan map[string]any, 100), done: make(chan error, 1)}
	cfg := bridge.Config{
		Version: "test",
		Open: func(ctx context.Context, pid int, session string) (*governor.Governor, error) {
			return governor.New(st(t), governor.Options{PID: pid, Session: session, TTL: 3 * time.Second})
		},
		LimitFor: func(resource string, flag int) (int, string, error) {
			if flag == 0 {
				return 0, "", fmt.Errorf("resource %q has no limit", resource)
			}
			return flag, "", nil
		},
		ProviderLimits: func(name string) governor.ProviderLimits { p, _ := cat.Provider(name); return p.Limits },
		OwnerPoll:      ownerPoll,
	}
	cfg.Acquire = bridge.AcquirePipeline(cat)
	if acq := cfg.Acquire; wrap != nil {
		cfg.Acquire = func(ctx context.Context, g *governor.Governor, a bridge.AcquireArgs, ev bridge.Events) (bridge.Held, error) {
			h, err := acq(ctx, g, a, ev)
			if err != nil {
				return nil, err
			}
			return wrap(h), nil
		}
	}
	go func() {
		err := bridge.Serve(context.Background(), inR, outW, cfg)
		outW.Close()
		c.done <- err
	}()
	go func() {
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Errorf("bridge wrote %q: %v", sc.Text(), err)
				continue
			}
			c.msgs <- m
		}
		close(c.msgs)
	}()
	t.Cleanup(func() { c.close() })
	return c
}

func (c *client) send(op string, args any) int {
	c.t.Helper()
	c.nextID++
	b, _ := json.Marshal(map[string]any{"id": c.nextID, "op": op, "args": args})
	if _, err := c.in.Write(append(b, '\n')); err != nil {
		c.t.Fatalf("write %s: %v", op, err)
	}
	return c.nextID
}

// next returns the first message that matches, of those read early and
// then of those to come; the others are kept for later.
func (c *client) next(match func(map[string]any) bool) map[string]any {
	c.t.Helper()
	for i, m := range c.early {
		if match(m) {
			c.early = append(c.early[:i:i], c.early[i+1:]...)
			return m
		}
	}
	timer := time.NewTimer(deadline)
	defer timer.Stop()
	for {
		select {
		case m, ok := <-c.msgs:
			if !ok {
				c.t.Fatalf("the bridge ended its output; unmatched messages: %v", c.early)
			}
			if match(m) {
				return m
			}
			c.early = append(c.early, m)
		case <-timer.C:
			c.t.Fatalf("no message in time; unmatched messages: %v", c.early)
		}
	}
}

func (c *client) reply(id int) map[string]any {
	c.t.Helper()
	return c.next(func(m map[string]any) bool { v, ok := m["id"].(float64); return ok && int(v) == id })
}

func (c *client) event(kind string) map[string]any {
	c.t.Helper()
	return c.next(func(m map[string]any) bool { return m["event"] == kind })
}

// call sends a request and returns its result, failing on an error.
func (c *client) call(op string, args any) map[string]any {
	c.t.Helper()
	r := c.reply(c.send(op, args))
	if r["ok"] != true {
		c.t.Fatalf("%s: %v", op, r["error"])
	}
	res, _ := r["result"].(map[string]any)
	return res
}

// fail sends a request and returns its error object, failing on success.
func (c *client) fail(op string, args any) map[string]any {
	c.t.Helper()
	r := c.reply(c.send(op, args))
	if r["ok"] != false {
		c.t.Fatalf("%s succeeded: %v", op, r["result"])
	}
	return r["error"].(map[string]any)
}

func (c *client) hello() {
	c.t.Helper()
	c.call("hello", map[string]any{"protocol": 1, "client": "go-test", "pid": os.Getpid()})
}

func (c *client) close() {
	c.in.Close()
	select {
	case err := <-c.done:
		if err != nil {
			c.t.Errorf("Serve: %v", err)
		}
		c.done <- nil
	case <-time.After(deadline):
		c.t.Error("Serve did not return after stdin EOF")
	}
}

func backends(t *testing.T, f func(t *testing.T, st store)) {
	t.Run("file", func(t *testing.T) { f(t, fileStore(t)) })
	t.Run("redis", func(t *testing.T) { f(t, redisStore(t)) })
}

func TestHelloFirstAndProtocol(t *testing.T) {
	c := start(t, fileStore(t))
	e := c.fail("acquire", map[string]any{"resources": []string{"x"}, "limit": 1})
	if e["kind"] != "protocol" || !strings.Contains(e["message"].(string), "hello") {
		t.Fatalf("acquire before hello: %v", e)
	}
	e = c.fail("hello", map[string]any{"protocol": 2, "client": "py/9", "pid": os.Getpid()})
	if e["kind"] != "protocol" || !strings.Contains(e["message"].(string), "protocol 1") || !strings.Contains(e["message"].(string), "protocol 2") {
		t.Fatalf("hello protocol 2: %v", e)
	}
	e = c.fail("hello", map[string]any{"protocol": 1, "pid": os.Getpid(), "bogus": true})
	if e["kind"] != "failure" || !strings.Contains(e["message"].(string), "bogus") {
		t.Fatalf("unknown field: %v", e)
	}
	c.hello()
	e = c.fail("nope", nil)
	if e["code"] != float64(125) || !strings.Contains(e["message"].(string), "acquire") {
		t.Fatalf("unknown op: %v", e)
	}
}

func TestAcquireBusyRelease(t *testing.T) {
	backends(t, func(t *testing.T, st store) {
		a, b := start(t, st), start(t, st)
		a.hello()
		b.hello()
		got := a.call("acquire", map[string]any{"resources": []string{"r"}, "limit": 1})
		res := got["resources"].([]any)[0].(map[string]any)
		if got["lease"] != "L1" || res["token"].(float64) <= 0 || !strings.HasPrefix(res["handle"].(string), "r@") {
			t.Fatalf("acquire result: %v", got)
		}
		e := b.fail("acquire", map[string]any{"resources": []string{"r"}, "limit": 1})
		if e["code"] != float64(73) || e["kind"] != "busy" || e["resource"] != "r" || len(e["holders"].([]any)) != 1 {
			t.Fatalf("busy: %v", e)
		}
		e = b.fail("acquire", map[string]any{"resources": []string{"r"}, "limit": 1, "if_busy": "skip"})
		if e["code"] != float64(75) || e["kind"] != "skipped" {
			t.Fatalf("skip: %v", e)
		}
		a.call("release", map[string]any{"lease": "L1"})
		if e := a.fail("release", map[string]any{"lease": "L1"}); e["kind"] != "failure" {
			t.Fatalf("second release: %v", e)
		}
		b.call("acquire", map[string]any{"resources": []string{"r"}, "limit": 1})
	})
}

func TestWaitIsHandedOverAndCancelled(t *testing.T) {
	backends(t, func(t *testing.T, st store) {
		a, b := start(t, st), start(t, st)
		a.hello()
		b.hello()
		a.call("acquire", map[string]any{"resources": []string{"w"}, "limit": 1})
		id := b.send("acquire", map[string]any{"resources": []string{"w"}, "limit": 1, "if_busy": "wait"})
		q := b.event("queued")
		if q["request"] != float64(id) || q["resource"] != "w" || q["position"] != float64(1) {
			t.Fatalf("queued: %v", q)
		}
		// A wait holds up nothing: slots answers meanwhile.
		if s := b.call("slots", map[string]any{"resources": []string{"w"}}); len(s["resources"].([]any)) != 1 {
			t.Fatalf("slots: %v", s)
		}
		a.call("release", map[string]any{"lease": "L1"})
		if r := b.reply(id); r["ok"] != true {
			t.Fatalf("waiting acquire: %v", r)
		}
		// A wait cancelled by cancel_request leaves nothing queued.
		id = a.send("acquire", map[string]any{"resources": []string{"w"}, "limit": 1, "if_busy": "wait"})
		a.event("queued")
		a.call("cancel_request", map[string]any{"request": id})
		if r := a.reply(id); r["ok"] != false || r["error"].(map[string]any)["kind"] != "cancelled" {
			t.Fatalf("cancelled wait: %v", r)
		}
		s := a.call("slots", map[string]any{"resources": []string{"w"}})
		if w := s["resources"].([]any)[0].(map[string]any)["waiters"].([]any); len(w) != 0 {
			t.Fatalf("waiters after cancel: %v", w)
		}
	})
}

func TestForcedTakeoverIsLostAndFenced(t *testing.T) {
	backends(t, func(t *testing.T, st store) {
		a, b := start(t, st), start(t, st)
		a.hello()
		b.call("hello", map[string]any{"protocol": 1, "pid": os.Getpid(), "session": "taker"})
		got := a.call("acquire", map[string]any{"resources": []string{"t"}, "limit": 1})
		old := got["resources"].([]any)[0].(map[string]any)
		took := b.call("takeover", map[string]any{"resource": "t", "lease_id": old["lease_id"], "force": true, "limit": 1})
		if tok := took["resources"].([]any)[0].(map[string]any)["token"].(float64); tok <= old["token"].(float64) {
			t.Fatalf("takeover token %v not above %v", tok, old["token"])
		}
		lost := a.event("lost")
		if lost["lease"] != "L1" || lost["resource"] != "t" || lost["code"] != float64(122) {
			t.Fatalf("lost: %v", lost)
		}
		if e := a.fail("seq_next", map[string]any{"lease": "L1", "name": "v"}); e["kind"] != "lost" {
			t.Fatalf("seq_next after loss: %v", e)
		}
		if e := a.fail("release", map[string]any{"lease": "L1"}); e["kind"] != "lost" || e["code"] != float64(122) {
			t.Fatalf("release after loss: %v", e)
		}
		if n := b.call("seq_next", map[string]any{"lease": took["lease"], "name": "v"}); n["number"] != float64(1) {
			t.Fatalf("seq_next: %v", n)
		}
	})
}

func TestStdinEOFReleasesEverything(t *testing.T) {
	backends(t, func(t *testing.T, st store) {
		a, b := start(t, st), start(t, st)
		a.hello()
		b.hello()
		a.call("acquire", map[string]any{"resources": []string{"e1", "e2"}, "limit": 1})
		a.send("acquire", map[string]any{"resources": []string{"e3"}, "limit": 1, "if_busy": "wait"})
		a.close()
		b.call("acquire", map[string]any{"resources": []string{"e1", "e2", "e3"}, "limit": 1})
	})
}

// emptyCatalog is the catalog of a configuration with no file.
func emptyCatalog(t testing.TB) *config.Catalog { return catalogOf(t, "") }

// catalogOf is the catalog of exec-defaults.yaml yaml ("": no file).
func catalogOf(t testing.TB, yaml string) *config.Catalog {
	dir := t.TempDir()
	if yaml != "" {
		if err := os.WriteFile(filepath.Join(dir, "exec-defaults.yaml"), []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	l, err := config.Load(config.LoadOptions{Env: []string{"HOME=" + dir, "XDG_CONFIG_HOME=" + dir}, Getwd: func() (string, error) { return dir, nil }})
	if err != nil {
		t.Fatal(err)
	}
	return l.Catalog()
}

// ownerPoll is the OwnerPoll of the bridges start serves (0: the
// default); a test sets it for its own.
var ownerPoll time.Duration

// TestClientDeathEndsTheBridge: a client that died while its stdin pipe
// stays open (a forked child kept the write end) is seen by its pid, and
// everything it held is released. Where its process is watched without
// polling (Linux), it is seen with no poll at all.
func TestClientDeathEndsTheBridge(t *testing.T) {
	t.Run("polled", func(t *testing.T) { clientDeathEndsTheBridge(t) })
	if proc.Portable() {
		return
	}
	t.Run("watched", func(t *testing.T) {
		ownerPoll = time.Hour
		defer func() { ownerPoll = 0 }()
		clientDeathEndsTheBridge(t)
	})
}

func clientDeathEndsTheBridge(t *testing.T) {
	st := fileStore(t)
	child := exec.Command("sleep", "600")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _, _ = child.Process.Wait() })
	a, b := start(t, st), start(t, st)
	a.call("hello", map[string]any{"protocol": 1, "pid": child.Process.Pid})
	b.hello()
	a.call("acquire", map[string]any{"resources": []string{"d"}, "limit": 1})
	id := b.send("acquire", map[string]any{"resources": []string{"d"}, "limit": 1, "if_busy": "wait"})
	b.event("queued")
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_, _ = child.Process.Wait()
	select {
	case err := <-a.done:
		a.done <- err
	case <-time.After(deadline):
		t.Fatal("the bridge of a dead client did not end")
	}
	if r := b.reply(id); r["ok"] != true {
		t.Fatalf("the waiter after the client's death: %v", r)
	}
}

// TestGrantedComesJustBeforeItsReply: acquire's granted event names the
// request and its lease, and the next message is that request's reply.
func TestGrantedComesJustBeforeItsReply(t *testing.T) {
	c := start(t, fileStore(t))
	c.hello()
	id := c.send("acquire", map[string]any{"resources": []string{"g"}, "limit": 1})
	ev := c.next(func(map[string]any) bool { return true })
	if ev["event"] != "granted" || ev["request"] != float64(id) || ev["lease"] != "L1" {
		t.Fatalf("first message after acquire: %v; want its granted event", ev)
	}
	r := c.next(func(map[string]any) bool { return true })
	if r["id"] != float64(id) || r["ok"] != true {
		t.Fatalf("message after granted: %v; want the acquire's reply", r)
	}
}

// TestIdleBridgeStopsWaking: a bridge whose client's process is watched
// without polling (Linux) stops its loop's ticker once at rest (no
// request for a second), and starts it again at the next request: an
// idle bridge wakes for nothing.
func TestIdleBridgeStopsWaking(t *testing.T) {
	if proc.Portable() {
		t.Skip("the portable path polls the client's pid")
	}
	c := start(t, fileStore(t))
	c.hello()
	stopped := func() bool {
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			n := bridge.OwnerTicks.Load()
			time.Sleep(2 * bridge.DefaultOwnerPoll)
			if bridge.OwnerTicks.Load() == n {
				return true
			}
		}
		return false
	}
	if !stopped() {
		t.Fatal("an idle bridge still ticks 30 s after its last request")
	}
	n := bridge.OwnerTicks.Load()
	c.call("slots", map[string]any{})
	deadline := time.Now().Add(30 * time.Second)
	for bridge.OwnerTicks.Load() == n {
		if time.Now().After(deadline) {
			t.Fatal("the ticker did not start again after a request (the bridge would not find its next rest)")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !stopped() {
		t.Fatal("the bridge did not stop ticking at its next rest")
	}
}
