package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/governor-dev/governor/internal/redistest"
)

// TestTakeoverNothingToTakeOver: a lease that was released, or never
// existed, is not taken over: exit 73, "nothing to take over", and no
// lease is handed out.
func TestTakeoverNothingToTakeOver(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, g []string) {
		code, out, errs := cli(t, append(g, "acquire", "heavy", "--limit", "1", "--ttl", "1m")...)
		if code != 0 {
			t.Fatalf("acquire: exit %d, %s", code, errs)
		}
		lease := strings.Fields(out)[0]
		if code, _, errs := cli(t, append(g, "release", lease)...); code != 0 {
			t.Fatalf("release: exit %d, %s", code, errs)
		}
		for _, id := range []string{strings.TrimPrefix(lease, "heavy@"), "00112233445566778899aabbccddeeff"} {
			code, out, errs := cli(t, append(g, "takeover", "heavy", "--lease", id, "--limit", "1")...)
			if code != 73 || out != "" || !strings.Contains(errs, "nothing to take over") {
				t.Fatalf("takeover of released or unknown lease %s: exit %d, stdout %q, stderr %q; want 73, nothing to take over", id, code, out, errs)
			}
		}
		if code, out, errs := cli(t, append(g, "slots", "heavy", "--json")...); code != 0 || strings.Contains(out, `"lease_id"`) {
			t.Fatalf("after refused takeovers, slots: exit %d, %s %s; want no holder", code, out, errs)
		}
	})
}

// takeoverHint runs governor (bin, args, in env) into a refusal and
// returns the 'governor takeover' command it prints.
func takeoverHint(t *testing.T, bin string, env []string, args ...string) string {
	t.Helper()
	c := exec.Command(bin, args...)
	c.Env = env
	var errb bytes.Buffer
	c.Stderr = &errb
	err := c.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 73 {
		t.Fatalf("governor %q: %v, stderr %s; want exit 73", args, err, errb.String())
	}
	_, hint, ok := strings.Cut(errb.String(), "take it over: ")
	if !ok {
		t.Fatalf("refusal without a takeover hint: %s", errb.String())
	}
	hint, _, _ = strings.Cut(hint, "\n")
	return hint
}

// pasteHint runs hint (and --force: the holder is alive) in a shell as a
// user would paste it: in another directory, with governor on PATH and a
// default state directory of its own, and env.
func pasteHint(t *testing.T, bin, hint string, env []string) (int, string, string) {
	t.Helper()
	c := exec.Command("sh", "-c", hint+" --force")
	c.Dir = t.TempDir()
	c.Env = append(cleanEnv(), append([]string{"PATH=" + filepath.Dir(bin) + ":" + os.Getenv("PATH"),
		"XDG_STATE_HOME=" + t.TempDir(), "XDG_CONFIG_HOME=" + t.TempDir()}, env...)...)
	return execCode(t, c)
}

// TestTakeoverHintActsOnTheSameStore: the hint of a refusal, pasted
// into a shell elsewhere, takes over the lease on the store that refused
// (file backend: --config and --dir; Redis: the URL of the flag, or
// "$GOVERNOR_REDIS_URL" when it came from there).
func TestTakeoverHintActsOnTheSameStore(t *testing.T) {
	t.Parallel()
	check := func(t *testing.T, tg *target, hint string, env []string) {
		t.Helper()
		g := tg.governor(t)
		old := tg.status(t, g, "heavy").Holders
		code, out, errs := pasteHint(t, tg.bin, hint, env)
		if code != 0 || !strings.HasPrefix(out, "heavy@") {
			t.Fatalf("pasted %q: exit %d, stdout %q, stderr %s; want the lease taken over", hint, code, out, errs)
		}
		now := tg.status(t, g, "heavy").Holders
		if len(old) != 1 || len(now) != 1 || now[0].LeaseID == old[0].LeaseID || !strings.Contains(out, now[0].LeaseID) {
			t.Fatalf("pasted %q: holders %+v before, %+v after; want the new lease %q in the store that refused", hint, old, now, out)
		}
	}
	// held is tg with heavy held by a CLI lease.
	held := func(t *testing.T, tg *target) *target {
		t.Helper()
		if code, _, errs := tg.run(t, "acquire", "heavy", "--ttl", "1m"); code != 0 {
			t.Fatalf("acquire: %d %s", code, errs)
		}
		return tg
	}
	t.Run("file", func(t *testing.T) {
		tg := held(t, fileTarget(t, ""))
		hint := takeoverHint(t, tg.bin, cleanEnv(), append(tg.global(), "acquire", "heavy")...)
		for _, want := range []string{"--config " + tg.config, "--dir " + tg.dir, "--project " + runProject} {
			if !strings.Contains(hint, want) {
				t.Errorf("hint %q lacks %q", hint, want)
			}
		}
		check(t, tg, hint, nil)
	})
	t.Run("redis-flag", func(t *testing.T) {
		s := redistest.Start(t)
		tg := held(t, &target{bin: governorBin(t), name: "redis", redisURL: s.URL(), config: writeRunConfig(t, "")})
		hint := takeoverHint(t, tg.bin, cleanEnv(), append(tg.global(), "run", "--resource", "heavy", "--", "true")...)
		if !strings.Contains(hint, "--redis-url "+s.URL()) {
			t.Errorf("hint %q lacks --redis-url %s", hint, s.URL())
		}
		check(t, tg, hint, nil)
	})
	t.Run("redis-env", func(t *testing.T) {
		s := redistest.Start(t)
		tg := held(t, &target{bin: governorBin(t), name: "redis", redisURL: s.URL(), config: writeRunConfig(t, "")})
		env := []string{"GOVERNOR_REDIS_URL=" + s.URL()}
		hint := takeoverHint(t, tg.bin, append(cleanEnv(), env...), "--config", tg.config, "acquire", "heavy")
		if !strings.Contains(hint, `--redis-url "$GOVERNOR_REDIS_URL"`) || strings.Contains(hint, s.URL()) {
			t.Errorf("hint %q: want --redis-url \"$GOVERNOR_REDIS_URL\", not the URL itself", hint)
		}
		check(t, tg, hint, env)
	})
}

// TestTakeoverSessionEverywhere: a relay restart takes over every lease
// of the previous session, on every resource, in lock order; the new
// session then holds them all, and each takeover is recorded.
func TestTakeoverSessionEverywhere(t *testing.T) {
	backends(t, func(t *testing.T, g []string) {
		cfg := configFile(t, "project: clitest\nlock_order: [plan, issue]\n")
		g = append(append([]string{}, g[:len(g)-2]...), "--config", cfg) // backends ends with --config FILE
		for _, r := range []string{"zeta", "issue:1", "plan:9"} {
			if code, _, errs := cli(t, append(g, "acquire", r, "--limit", "2", "--ttl", "1m", "--session", "relay-1")...); code != 0 {
				t.Fatalf("acquire %s: exit %d, %s", r, code, errs)
			}
		}
		if code, _, errs := cli(t, append(g, "acquire", "issue:1", "--limit", "2", "--ttl", "1m", "--session", "bystander")...); code != 0 {
			t.Fatalf("acquire: exit %d, %s", code, errs)
		}
		t.Setenv("GOVERNOR_SESSION", "relay-2")
		// relay-1 declared no process: it may be alive. Nothing is taken.
		code, out, errs := cli(t, append(g, "takeover", "--session", "relay-1")...)
		if code != 73 || out != "" || !strings.Contains(errs, "not taking over") {
			t.Fatalf("takeover --session of owners that may be alive: exit %d, %q, %s; want 73, nothing taken", code, out, errs)
		}
		code, out, errs = cli(t, append(g, "takeover", "--session", "relay-1", "--force")...)
		if code != 0 {
			t.Fatalf("takeover --session --force: exit %d, %s", code, errs)
		}
		var order []string
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			order = append(order, strings.SplitN(line, "@", 2)[0])
		}
		if strings.Join(order, ",") != "plan:9,issue:1,zeta" {
			t.Fatalf("takeover --session printed %q; want plan:9, issue:1, zeta in that order", out)
		}
		_, slots, _ := cli(t, append(g, "slots", "--json")...)
		if strings.Contains(slots, `"relay-1"`) || strings.Count(slots, `"relay-2"`) != 3 || strings.Count(slots, `"bystander"`) != 1 {
			t.Fatalf("after the relay takeover, slots = %s; want relay-2 holding all three, bystander untouched", slots)
		}
		_, events, _ := cli(t, append(g, "events")...)
		if n := strings.Count(events, "taken over by session relay-2"); n != 3 {
			t.Fatalf("events record %d takeovers by relay-2, want 3:\n%s", n, events)
		}
		if code, _, errs := cli(t, append(g, "takeover", "--session", "relay-1")...); code != 73 || !strings.Contains(errs, "nothing to take over") {
			t.Fatalf("second takeover --session: exit %d, %s; want 73, nothing to take over", code, errs)
		}
		if code, _, errs := cli(t, append(g, "takeover", "--lease", "abc")...); code != 125 || !strings.Contains(errs, "RESOURCE") {
			t.Fatalf("takeover --lease without RESOURCE: exit %d, %s; want 125", code, errs)
		}
	})
}
