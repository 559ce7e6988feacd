package faults_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/redisbackend"
	"github.com/governor-dev/governor/internal/redistest"
)

// cliResult is one run of the governor binary.
type cliResult struct {
	code           int
	stdout, stderr string
	took           time.Duration
}

// governorCLI runs the governor binary with args and env (added to a
// clean environment), killing it after 60s.
func governorCLI(t *testing.T, env []string, args ...string) cliResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, governorBin(t), args...)
	c.Env = cleanEnv(env...)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	start := time.Now()
	err := c.Run()
	r := cliResult{stdout: out.String(), stderr: errb.String(), took: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("governor %q hung: killed after 60s; stderr %s", args, &errb)
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		t.Fatalf("governor %q: %v", args, err)
	}
	return r
}

// CLI: user input that is wrong exits 125 with a message naming the
// value and what is allowed, without touching Redis state.
func TestBadInputCLI(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	rdb := client(t, s.Addr)
	project := uniq("badcli")
	cfg := runConfig(t, project, "resources:\n  heavy: {limit: 2}\n")
	global := []string{"--config", cfg, "--backend", "redis", "--redis-url", s.URL()}
	if r := governorCLI(t, nil, append(global, "acquire", "heavy", "--ttl", "1m")...); r.code != 0 {
		t.Fatalf("acquire: %d %s", r.code, r.stderr)
	}
	before := snapshot(t, rdb)
	big := strings.Repeat("x", 100<<10) // argv strings stop at 128 KiB
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"empty name", []string{"acquire", "", "--limit", "1"}, []string{"empty resource name"}},
		{"huge name", []string{"acquire", big, "--limit", "1"}, []string{"at most 200 bytes"}},
		{"newline", []string{"acquire", "a\nb", "--limit", "1"}, []string{"white space"}},
		{"hash tag", []string{"acquire", "{heavy}", "--limit", "1"}, []string{"not allowed"}},
		{"run hash tag", []string{"run", "--resource", "a{b}", "--limit", "1", "--", "true"}, []string{"not allowed"}},
		{"run huge name", []string{"run", "--resource", big, "--limit", "1", "--", "true"}, []string{"at most 200 bytes"}},
		{"weight 0", []string{"run", "--resource", "heavy:0", "--", "true"}, []string{"weight 0"}},
		{"negative weight", []string{"acquire", "heavy", "--weight", "-1"}, []string{"weight -1"}},
		{"weight above limit", []string{"acquire", "heavy", "--weight", "3"}, []string{"weight 3"}},
		{"run weight above limit", []string{"run", "--resource", "heavy:3", "--", "true"}, []string{"weight 3", "above its limit"}},
		{"limit 0", []string{"acquire", "gpu", "--limit", "0"}, []string{"--limit 0; allowed: 1 to"}},
		{"negative limit", []string{"acquire", "gpu", "--limit", "-1"}, []string{"--limit -1"}},
		{"enormous limit", []string{"acquire", "gpu", "--limit", "99999999999999999999"}, []string{"99999999999999999999"}},
		{"limit above max", []string{"acquire", "gpu", "--limit", strconv.Itoa(governor.MaxLimit + 1)}, []string{"1 to"}},
		{"negative ttl", []string{"acquire", "heavy", "--ttl", "-1s"}, []string{"TTL"}},
		{"tiny ttl", []string{"acquire", "heavy", "--ttl", "1ns"}, []string{"TTL"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := governorCLI(t, nil, append(global, tc.args...)...)
			if r.code != 125 {
				t.Fatalf("exit %d, want 125; stdout %q stderr %.300q", r.code, r.stdout, r.stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr %.300q lacks %q", r.stderr, w)
				}
			}
			if len(r.stderr) > 2000 {
				t.Errorf("stderr of %d bytes: the bad value is echoed whole", len(r.stderr))
			}
		})
	}
	sameSnapshot(t, "bad CLI input", before, snapshot(t, rdb))

	// Configuration: a TTL of 0, a limit of 0 or negative.
	for _, tc := range []struct{ name, yaml, want string }{
		{"ttl 0", "lease:\n  ttl: 0s\n", "lease.ttl"},
		{"limit 0", "resources:\n  heavy: {limit: 0}\n", "limit"},
		{"negative limit", "resources:\n  heavy: {limit: -2}\n", "limit"},
		{"enormous limit", "resources:\n  heavy: {limit: 99999999999}\n", "limit"},
		{"bad name", "resources:\n  \"a{b}\": {limit: 1}\n", "a{b}"},
	} {
		t.Run("config "+tc.name, func(t *testing.T) {
			bad := runConfig(t, project, tc.yaml)
			r := governorCLI(t, nil, "--config", bad, "--backend", "redis", "--redis-url", s.URL(), "run", "--resource", "heavy", "--", "true")
			if r.code != 125 || !strings.Contains(r.stderr, tc.want) {
				t.Fatalf("exit %d, want 125 naming %q; stderr %s", r.code, tc.want, r.stderr)
			}
		})
	}
	sameSnapshot(t, "bad configuration", before, snapshot(t, rdb))

	// --weight 0 of acquire: the library's zero value means "default
	// (1)", so the CLI must refuse it rather than pass it on.
	t.Run("acquire weight 0", func(t *testing.T) {
		r := governorCLI(t, nil, append(global, "acquire", "zero", "--limit", "2", "--weight", "0", "--ttl", "1m")...)
		if r.code != 125 {
			t.Fatalf("exit %d, want 125; stdout %q", r.code, r.stdout)
		}
	})
}

// Backends that cannot be used: malformed URLs, wrong passwords, TLS to
// a plain server. Each is exit 125 with a clear message, quickly, and the
// password never shows.
func TestBadBackendCLI(t *testing.T) {
	t.Parallel()
	const password = "s3cr3t-PASS-9f2c"
	s := redistest.Start(t, "--requirepass", password)
	project := uniq("badurl")
	cfg := runConfig(t, project, "resources:\n  heavy: {limit: 1}\n")
	port, err := redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	closed := "127.0.0.1:" + strconv.Itoa(port)
	for _, tc := range []struct {
		name, url string
		want      []string
	}{
		{"not redis", "http://" + s.Addr, []string{"redis.url", `scheme "http"`}},
		{"bad port", "redis://127.0.0.1:notaport/0", []string{"redis.url", "not a valid URL"}},
		{"bad db", "redis://" + s.Addr + "/notadb", []string{"redis.url", "database"}},
		{"unterminated", "redis://[::1", []string{"redis.url", "not a valid URL"}},
		{"nothing listening", "redis://:" + password + "@" + closed + "/0", []string{"cannot reach Redis", ":***@"}},
		{"no password", "redis://" + s.Addr + "/0", []string{"cannot reach Redis", "NOAUTH"}},
		{"wrong password", "redis://:wrong-" + password + "@" + s.Addr + "/0", []string{"cannot reach Redis", "WRONGPASS"}},
		{"wrong user", "redis://nobody:" + password + "@" + s.Addr + "/0", []string{"cannot reach Redis", "WRONGPASS"}},
		{"TLS to a plain server", "rediss://:" + password + "@" + s.Addr + "/0", []string{"cannot reach Redis", "TLS port"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmds := [][]string{
				{"run", "--resource", "heavy", "--", "true"},
				{"slots", "--json"},
				{"acquire", "heavy"},
			}
			if strings.HasPrefix(tc.url, "rediss:") {
				cmds = cmds[:1] // each takes the dial timeout
			}
			for _, args := range cmds {
				r := governorCLI(t, nil, append([]string{"--config", cfg, "--backend", "redis", "--redis-url", tc.url}, args...)...)
				if r.code != 125 {
					t.Fatalf("%s: exit %d, want 125; stderr %s", args[0], r.code, r.stderr)
				}
				msg := r.stderr
				if slices.Contains(args, "--json") { // the failure is one JSON object
					var e struct {
						ExitCode int    `json:"exit_code"`
						Error    string `json:"error"`
					}
					if err := json.Unmarshal([]byte(r.stderr), &e); err != nil || e.ExitCode != 125 {
						t.Errorf("%s --json: stderr %q is not the JSON error object (%v)", args[0], r.stderr, err)
					}
					msg = e.Error
				}
				for _, w := range tc.want {
					if !strings.Contains(msg, w) {
						t.Errorf("%s: stderr %q lacks %q", args[0], r.stderr, w)
					}
				}
				if strings.Contains(r.stderr+r.stdout, password) {
					t.Errorf("%s: the password shows: %s", args[0], r.stderr)
				}
				if r.took > 20*time.Second {
					t.Errorf("%s: took %v to fail", args[0], r.took)
				}
				t.Logf("%s: exit 125 after %v: %s", args[0], r.took.Round(time.Millisecond), strings.TrimSpace(r.stderr))
			}
		})
	}
	// The right password works, and is not shown either.
	r := governorCLI(t, nil, "--config", cfg, "--backend", "redis", "--redis-url", "redis://:"+password+"@"+s.Addr+"/0", "run", "--resource", "heavy", "--", "true")
	if r.code != 0 || strings.Contains(r.stderr+r.stdout, password) {
		t.Fatalf("with the password: exit %d stderr %s", r.code, r.stderr)
	}
}

// Scripts evicted from the server's cache (SCRIPT FLUSH between calls,
// as after a restart or a failover): go-redis's Script.Run gets NOSCRIPT
// from EVALSHA and falls back to EVAL; every operation goes on working.
func TestScriptCacheFlushed(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	rdb := client(t, s.Addr)
	g := newGovernor(t, s.Addr, governor.Options{Project: uniq("noscript"), TTL: 2 * time.Second})
	ctx := context.Background()
	flush := func() {
		t.Helper()
		if err := rdb.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}
	flush()
	l, err := g.Acquire(ctx, "heavy", governor.AcquireOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	exp := l.Expires()
	for range 3 { // renewals (every TTL/3) across flushes
		flush()
		time.Sleep(700 * time.Millisecond)
	}
	if l.Err() != nil || !l.Expires().After(exp) {
		t.Fatalf("lease across script flushes: %v, expiry %v then %v", l.Err(), exp, l.Expires())
	}
	flush()
	if _, err := g.Status(ctx, "heavy"); err != nil {
		t.Fatal(err)
	}
	flush()
	if _, err := g.Acquire(ctx, "heavy", governor.AcquireOptions{Limit: 1}); !errors.Is(err, governor.ErrBusy) {
		t.Fatalf("second acquire: %v, want busy", err)
	}
	flush()
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
}

// A server without scripting (EVAL and EVALSHA renamed away): every call
// is a clear, final ErrBackend naming the command, nothing hangs, and no
// resource state is created.
func TestScriptingDisabled(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t, "--rename-command", "EVAL", "", "--rename-command", "EVALSHA", "")
	rdb := client(t, s.Addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := redisbackend.New(ctx, rdb)
	if err != nil {
		if !errors.Is(err, governor.ErrBackend) {
			t.Fatalf("New without scripting: %v, want ErrBackend", err)
		}
		if keys, _ := rdb.Keys(ctx, "*").Result(); len(keys) != 0 {
			t.Fatalf("a refused New left keys %v", keys)
		}
		return
	}
	defer b.Close()
	g, err := governor.New(b, governor.Options{Project: uniq("noeval")})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close() // its suspend watch runs until then (noLeaks of later tests)
	for _, mode := range []governor.Mode{governor.Fail, governor.Wait} {
		_, err = g.Acquire(ctx, "heavy", governor.AcquireOptions{Limit: 1, Mode: mode})
		if !errors.Is(err, governor.ErrBackend) || !strings.Contains(strings.ToLower(err.Error()), "unknown command") {
			t.Fatalf("acquire without scripting: %v, want ErrBackend naming the unknown command", err)
		}
	}
	if _, err := g.Status(ctx, "heavy"); !errors.Is(err, governor.ErrBackend) {
		t.Fatalf("status: %v", err)
	}
	if keys, _ := rdb.Keys(ctx, "*").Result(); len(keys) != 0 {
		t.Fatalf("a failed acquire left keys %v", keys)
	}
	t.Fatal("New accepted a server without scripting")
}

// Garbage in the keys governor owns (a value of the wrong type, a corrupt
// holder record): a clear ErrBackend, no panic, and the garbage is left
// as it was, never overwritten.
func TestGarbageInKeys(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	rdb := client(t, s.Addr)
	project := uniq("garbage")
	g := newGovernor(t, s.Addr, governor.Options{Project: project, TTL: 2 * time.Second})
	b := g.Backend()
	ctx := context.Background()
	// The keys of a resource, by the suffix of their names; the events
	// stream is tested apart.
	suffix := func(k string) string { return k[strings.LastIndexByte(k, ':')+1:] }
	events := -1
	for i, k := range redisbackend.Keys(governor.Key{Project: project, Resource: "x"}) {
		name := suffix(k)
		if name == "e" || strings.HasPrefix(name, "event") {
			events = i
			continue
		}
		t.Run("string at "+name, func(t *testing.T) {
			res := "r-" + name
			rk := governor.Key{Project: project, Resource: res}
			key := redisbackend.Keys(rk)[i]
			// A holder and a waiter, so that every key is in use.
			l, err := g.Acquire(ctx, res, governor.AcquireOptions{Limit: 1})
			if err != nil {
				t.Fatal(err)
			}
			l.Detach()
			if r, err := b.Acquire(ctx, governor.Request{Key: rk, ID: "waiter", Limit: 1, Weight: 1, TTL: 2 * time.Second,
				Mode: governor.Wait, QueueTTL: time.Minute, New: true}); err != nil || r.Outcome != governor.Queued {
				t.Fatalf("waiter: %+v %v", r, err)
			}
			if err := rdb.Del(ctx, key).Err(); err != nil {
				t.Fatal(err)
			}
			if err := rdb.Set(ctx, key, "garbage", 0).Err(); err != nil {
				t.Fatal(err)
			}
			calls := []struct {
				name string
				call func() error
			}{
				{"acquire", func() error {
					_, err := g.Acquire(ctx, res, governor.AcquireOptions{Limit: 1})
					return err
				}},
				{"acquire wait", func() error {
					c, cancel := context.WithTimeout(ctx, 5*time.Second)
					defer cancel()
					_, err := g.Acquire(c, res, governor.AcquireOptions{Limit: 1, Mode: governor.Wait})
					return err
				}},
				{"renew", func() error { _, err := g.RenewHandle(ctx, l.Handle(), 0); return err }},
				{"status", func() error { _, err := g.Status(ctx, res); return err }},
				{"release", func() error { return g.ReleaseHandle(ctx, l.Handle(), false) }},
			}
			wrong := 0
			for _, c := range calls {
				err := c.call()
				switch {
				case err == nil, errors.Is(err, governor.ErrBusy), errors.Is(err, governor.ErrLeaseLost),
					errors.Is(err, governor.ErrNotHeld):
					// This call did not need the key.
				case errors.Is(err, governor.ErrBackend) && strings.Contains(err.Error(), "wrong type"):
					wrong++
				default:
					t.Errorf("%s: %v, want ErrBackend saying wrong type", c.name, err)
				}
			}
			if wrong == 0 {
				t.Errorf("no call reported the garbage at %s", key)
			}
			if v, err := rdb.Get(ctx, key).Result(); err != nil || v != "garbage" {
				t.Fatalf("garbage at %s overwritten: %q %v", key, v, err)
			}
		})
	}

	// Garbage at the events stream, which a script writes only when a
	// holder expires: that script fails half way. Redis does not roll
	// back a script's writes before an error, so a script that removed
	// the expired holder before its XADD failed would lose the rest (the
	// used weight in the state hash) and leave the resource full for
	// ever. Once the garbage is removed, the resource must still work.
	if events < 0 {
		t.Fatalf("no events key among %v", redisbackend.Keys(governor.Key{Project: project, Resource: "x"}))
	}
	t.Run("string at events", func(t *testing.T) {
		rk := governor.Key{Project: project, Resource: "re"}
		l, err := g.Acquire(ctx, "re", governor.AcquireOptions{Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		l.Detach() // expires in 2s
		ek := redisbackend.Keys(rk)[events]
		if err := rdb.Set(ctx, ek, "garbage", 0).Err(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2100 * time.Millisecond)
		_, err = g.Acquire(ctx, "re", governor.AcquireOptions{Limit: 1})
		if !errors.Is(err, governor.ErrBackend) || !strings.Contains(err.Error(), "wrong type") {
			t.Fatalf("acquire with garbage at the events: %v", err)
		}
		if v, _ := rdb.Get(ctx, ek).Result(); v != "garbage" {
			t.Fatalf("garbage overwritten: %q", v)
		}
		rdb.Del(ctx, ek)
		l2, err := g.Acquire(ctx, "re", governor.AcquireOptions{Limit: 1})
		if err != nil {
			st, _ := g.Status(ctx, "re")
			t.Fatalf("after removing the garbage: %v; status holders %d used %d", err, len(st.Holders), st.Used)
		}
		_ = l2.Release()
	})

	t.Run("corrupt holder record", func(t *testing.T) {
		ks := redisbackend.Keys(governor.Key{Project: project, Resource: "rec"})
		l, err := g.Acquire(ctx, "rec", governor.AcquireOptions{Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		l.Detach()
		if err := rdb.HSet(ctx, ks[1], "#"+l.ID(), "not a record").Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := g.Status(ctx, "rec"); !errors.Is(err, governor.ErrBackend) || !strings.Contains(err.Error(), "malformed") ||
			!strings.Contains(err.Error(), l.ID()) {
			t.Fatalf("status with a corrupt record: %v; want ErrBackend naming the malformed record", err)
		}
		if _, err := g.Acquire(ctx, "rec", governor.AcquireOptions{Limit: 1}); !errors.Is(err, governor.ErrBackend) {
			t.Fatalf("acquire next to a corrupt record: %v; want ErrBackend", err)
		}
		if v, _ := rdb.HGet(ctx, ks[1], "#"+l.ID()).Result(); v != "not a record" {
			t.Fatalf("corrupt record overwritten: %q", v)
		}
	})
}
