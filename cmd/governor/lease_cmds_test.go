package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/redistest"
	"github.com/governor-dev/governor/internal/view"
)

// cli runs Main in-process and returns exit code, stdout and stderr.
func cli(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// backends runs fn against the file backend and a real redis-server.
func backends(t *testing.T, fn func(t *testing.T, global []string)) {
	t.Run("file", func(t *testing.T) {
		fn(t, []string{"--backend", "file", "--dir", filepath.Join(t.TempDir(), "state"), "--config", emptyConfig(t)})
	})
	t.Run("redis", func(t *testing.T) {
		s := redistest.Start(t)
		fn(t, []string{"--backend", "redis", "--redis-url", s.URL(), "--config", emptyConfig(t)})
	})
	t.Run("redis-cluster", func(t *testing.T) {
		c := redistest.StartCluster(t, 3)
		url := "redis+cluster://" + c.Addrs()[0] + "?addr=" + c.Addrs()[1]
		fn(t, []string{"--backend", "redis", "--redis-url", url, "--config", emptyConfig(t)})
	})
	t.Run("redis-sentinel", func(t *testing.T) {
		master := redistest.Start(t)
		s := redistest.StartSentinel(t, master)
		fn(t, []string{"--backend", "redis", "--redis-url", "redis+sentinel://" + s.Addr + "?master_name=main", "--config", emptyConfig(t)})
	})
}

// acquireHandle runs `governor acquire RESOURCE ARGS` with the global
// flags g and returns the handle it prints (RESOURCE@ID.SECRET); an exit
// other than 0 fails t.
func acquireHandle(t *testing.T, g []string, resource string, args ...string) string {
	t.Helper()
	code, out, errs := cli(t, append(append(append([]string{}, g...), "acquire", resource), args...)...)
	if code != 0 || len(strings.Fields(out)) == 0 {
		t.Fatalf("acquire %s: exit %d, %s", resource, code, errs)
	}
	return strings.Fields(out)[0]
}

// configFile writes content to a new exec-defaults.yaml and returns its
// path.
func configFile(t testing.TB, content string) string {
	t.Helper()
	if strings.Contains(content, "budgets:") {
		clearOfWindowEdge(t)
	}
	p := filepath.Join(t.TempDir(), "exec-defaults.yaml")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// windowMargin is how long a test with budgets may take between writing
// its config and its last look at a budget.
const windowMargin = 2 * time.Minute

// clearOfWindowEdge returns once the next whole hour is at least
// windowMargin away. Every budget window of these tests (per 1h or 24h,
// aligned on the epoch; a calendar day in UTC or Paris) rolls on a whole
// hour, and a window that rolls inside a test drops what the test spent
// before it.
func clearOfWindowEdge(t testing.TB) {
	now := time.Now()
	edge := now.Truncate(time.Hour).Add(time.Hour)
	if wait := edge.Sub(now); wait < windowMargin {
		t.Logf("waiting %v for the hour to turn: its budget windows roll then", wait.Round(time.Second))
		time.Sleep(wait + time.Second)
	}
}

// emptyConfig is a config file with no settings, so that no file of the
// developer's machine leaks into the tests.
func emptyConfig(t *testing.T) string {
	return configFile(t, "project: clitest\n")
}

func TestAcquireRenewRelease(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, g []string) {
		code, out, errs := cli(t, append(g, "acquire", "heavy", "--limit", "1", "--ttl", "1m")...)
		if code != 0 {
			t.Fatalf("acquire: exit %d, %s", code, errs)
		}
		fields := strings.Fields(out)
		if len(fields) != 2 || !strings.HasPrefix(fields[0], "heavy@") {
			t.Fatalf("acquire printed %q, want 'heavy@ID.SECRET TOKEN'", out)
		}
		lease := fields[0]
		h, err := governor.ParseHandle(lease)
		if err != nil || h.Secret == "" {
			t.Fatalf("acquire printed handle %q: %v, want one with a secret", lease, err)
		}
		// The lease outlives the command: a second acquire is refused,
		// naming the holder and the takeover command.
		code, _, errs = cli(t, append(g, "acquire", "heavy", "--limit", "1")...)
		if code != 73 || !strings.Contains(errs, "held by session") || !strings.Contains(errs, "governor takeover heavy --lease "+h.ID) {
			t.Fatalf("second acquire: exit %d, stderr %q; want 73 naming the holder and takeover", code, errs)
		}
		if code, _, _ = cli(t, append(g, "acquire", "heavy", "--limit", "1", "--if-busy", "skip")...); code != 75 {
			t.Fatalf("--if-busy skip: exit %d, want 75", code)
		}
		if code, _, errs = cli(t, append(g, "acquire", "heavy", "--limit", "1", "--if-busy", "wait", "--wait-timeout", "300ms")...); code != 73 || !strings.Contains(errs, "--wait-timeout") {
			t.Fatalf("--wait-timeout: exit %d %q, want 73", code, errs)
		}
		if code, _, errs = cli(t, append(g, "renew", lease)...); code != 0 {
			t.Fatalf("renew: exit %d %s", code, errs)
		}
		code, out, _ = cli(t, append(g, "--json", "slots", "heavy")...)
		var sj view.Slots
		if code != 0 || json.Unmarshal([]byte(out), &sj) != nil || len(sj.Resources) != 1 || len(sj.Resources[0].Holders) != 1 {
			t.Fatalf("slots --json: exit %d, %s", code, out)
		}
		if x := sj.Resources[0].Holders[0]; x.LeaseID != h.ID || x.PID != 0 || sj.Resources[0].Waiters == nil || strings.Contains(out, h.Secret) {
			t.Fatalf("slots holder = %+v; want lease %s declared with no pid, and no secret in %s", x, h.ID, out)
		}
		if code, _, errs = cli(t, append(g, "release", lease)...); code != 0 {
			t.Fatalf("release: exit %d %s", code, errs)
		}
		if code, _, _ = cli(t, append(g, "release", lease)...); code != 122 {
			t.Fatalf("second release: exit %d, want 122", code)
		}
		if code, _, _ = cli(t, append(g, "renew", lease)...); code != 122 {
			t.Fatalf("renew after release: exit %d, want 122 (never re-acquires)", code)
		}
		code, out, _ = cli(t, append(g, "slots", "heavy")...)
		if code != 0 || !strings.Contains(out, "heavy  limit 1  in use 0  free 1  waiting 0") {
			t.Fatalf("slots after release: exit %d:\n%s", code, out)
		}
	})
}

// leaseID is the lease id of a handle acquire printed.
func leaseID(t *testing.T, handle string) string {
	t.Helper()
	h, err := governor.ParseHandle(handle)
	if err != nil {
		t.Fatal(err)
	}
	return h.ID
}

func TestBadInput(t *testing.T) {
	g := []string{"--backend", "file", "--dir", filepath.Join(t.TempDir(), "s"), "--config", emptyConfig(t)}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"acquire", "provider:anthropic"}, "providers.anthropic.max_concurrency"},
		{[]string{"acquire", "heavy", "--weight", "2"}, "weight 2 for heavy; allowed: 1 to the limit (1)"},
		{[]string{"acquire", "heavy", "--limit", "-3"}, "--limit -3; allowed: 1 to"},
		{[]string{"acquire", "bad name", "--limit", "1"}, "contains ' '"},
		{[]string{"acquire", "a{b}", "--limit", "1"}, "not allowed: { }"},
		{[]string{"acquire", "heavy", "--limit", "2", "--weight", "3"}, "weight 3 for heavy; allowed: 1 to the limit (2)"},
		{[]string{"acquire", "heavy", "--limit", "1", "--if-busy", "later"}, `"later" is not allowed; use fail, wait or skip`},
		{[]string{"release", "nolease"}, `lease handle "nolease": no '@'; expected RESOURCE@LEASE_ID.SECRET`},
		{[]string{"renew"}, "no lease: give RESOURCE@LEASE_ID.SECRET as printed by 'governor acquire' as an argument or, to keep its secret out of ps, in $GOVERNOR_LEASE"},
		{[]string{"release", ""}, "no lease: give RESOURCE@LEASE_ID.SECRET"},
		{[]string{"seq", "next", "v"}, "no lease: give RESOURCE@LEASE_ID.SECRET"},
		{[]string{"renew", "heavy@" + strings.Repeat("a", 40) + "." + strings.Repeat("b", 32)}, "the secret does not belong to the lease id"},
		{[]string{"--backend", "mysql", "slots"}, `"mysql" is not a backend`},
	}
	for _, c := range cases {
		code, _, errs := cli(t, append(append([]string{}, g...), c.args...)...)
		if code != 125 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 125 containing %q", c.args, code, errs, c.want)
		}
	}
	// Nothing was created by the refused commands.
	// (run and run:join are always configured: the exec-run resources.)
	code, out, _ := cli(t, append(g, "slots")...)
	if code != 0 || strings.Count(out, "in use 0") != strings.Count(out, "limit ") || strings.Contains(out, "HOLDER") || strings.Contains(out, "WAITER") {
		t.Fatalf("bad input left state behind: %s", out)
	}
}

func TestConfigCheck(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "exec-defaults.yaml")
	if err := os.WriteFile(bad, []byte("project: p\nlease:\n  ttl: 10s\n  heartbeat: 20s\nresources:\n  heavy: {limit: 0}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errs := cli(t, "--config", bad, "config", "check")
	if code != 125 || !strings.Contains(errs, "exec-defaults.yaml:4") || !strings.Contains(errs, "resources.heavy.limit") {
		t.Fatalf("config check of a bad file: exit %d, %q", code, errs)
	}
	good := filepath.Join(dir, "good.yaml")
	if err := os.WriteFile(good, []byte("project: p\nresources:\n  heavy: {limit: 1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := cli(t, "--config", good, "config", "check"); code != 0 || !strings.Contains(out, "ok: ") {
		t.Fatalf("config check of a good file: exit %d, %s %s", code, out, errs)
	}
	code, out, _ := cli(t, "--config", good, "--project", "flagged", "config", "show")
	if code != 0 || !strings.Contains(out, "flagged") || !strings.Contains(out, "flag") || !strings.Contains(out, "resources.heavy.limit") {
		t.Fatalf("config show: exit %d\n%s", code, out)
	}
}
