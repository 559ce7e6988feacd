package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/governor-dev/governor/internal/runner/recordtest"
	"github.com/governor-dev/governor/internal/view"
)

// envTarget runs governor with tg's store given by the environment
// (GOVERNOR_DIR or GOVERNOR_REDIS_URL), as a command under 'governor run'
// inherits it, with governor on PATH and no config file of the machine.
func envCommand(t *testing.T, tg *target, args ...string) *exec.Cmd {
	c := exec.Command(tg.bin, append([]string{"--config", tg.config}, args...)...)
	c.Env = append(cleanEnv(), "PATH="+filepath.Dir(tg.bin)+":"+os.Getenv("PATH"), "XDG_CONFIG_HOME="+t.TempDir())
	if tg.redisURL != "" {
		c.Env = append(c.Env, "GOVERNOR_REDIS_URL="+tg.redisURL)
	} else {
		c.Env = append(c.Env, "GOVERNOR_DIR="+tg.dir)
	}
	return c
}

// TestRunProgressTimeout: a command that marks progress with 'governor
// touch' runs to its end; one that stops marking is stopped with exit
// 122 (outcome lease_lost) and its slot is then free. The TTL is not
// what is tested: at 3 s, governor was once not scheduled within it at
// load 30, and its watchdog ended the marking run as stopped.
func TestRunProgressTimeout(t *testing.T) {
	t.Parallel()
	runTargets(t, "lease: {ttl: 10s}\n", func(t *testing.T, tg *target) {
		// Marks every 0.5 s for 8 s or more, with a progress timeout of 5 s:
		// it outlives the timeout only by marking. A mark is a new governor
		// process; at load 30 one took over a second to land, so the gap
		// between marks is kept well inside the timeout.
		code, _, errs := execCode(t, envCommand(t, tg, "run", "--resource", "heavy", "--progress-timeout", "5s", "--",
			"sh", "-c", `i=0; while [ $i -lt 16 ]; do governor touch || exit 9; sleep 0.5; i=$((i+1)); done`))
		if code != 0 {
			t.Fatalf("a run that marks progress: exit %d, %s; want 0", code, errs)
		}
		// Marks once, then is stuck.
		rec := filepath.Join(t.TempDir(), "runs.jsonl")
		start := time.Now()
		code, _, errs = execCode(t, envCommand(t, tg, "run", "--resource", "heavy", "--progress-timeout", "1s", "--record", rec, "--",
			"sh", "-c", `governor touch || exit 9; sleep 60`))
		if code != 122 || !strings.Contains(errs, "no progress mark") {
			t.Fatalf("a stuck run: exit %d, stderr %s; want 122 naming the missing progress mark", code, errs)
		}
		if d := time.Since(start); d > 50*time.Second {
			t.Fatalf("the stuck run was stopped only after %v", d)
		}
		if recs := recordtest.Ends(t, rec); len(recs) == 0 || recs[len(recs)-1].Outcome != "lease_lost" {
			t.Fatalf("records of the stuck run: %+v; want outcome lease_lost", recs)
		}
		if code, _, errs := tg.run(t, "run", "--resource", "heavy", "--", "true"); code != 0 {
			t.Fatalf("after the stuck run was stopped, the slot is not free: exit %d, %s", code, errs)
		}
		// Without a lease to mark: a clear error.
		if code, _, errs := execCode(t, envCommand(t, tg, "touch")); code != 125 || !strings.Contains(errs, "GOVERNOR_HELD") {
			t.Fatalf("touch outside a run: exit %d, %s; want 125 naming GOVERNOR_HELD", code, errs)
		}
	})
}

// TestAcquireProgressTimeout: a CLI lease with --progress-timeout is
// kept by renew (a mark) and touch past its timeout, lost once neither
// came in time (renew and touch exit 122), and slots shows its last
// mark.
//
// The marked lease has a 5 s timeout and is marked every 0.2 s until it
// has outlived it: each mark is a new Main (a new Redis client), and at
// load 30 one on the Cluster took 1.4 s, past the 1.5 s it once had. The
// stalled lease, on a resource of its own, is never marked after its
// acquire and has a 1 s timeout: by the end of the marks it has gone 5 s
// without one.
func TestAcquireProgressTimeout(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, g []string) {
		const timeout = 5 * time.Second
		lease := acquireHandle(t, g, "heavy", "--limit", "1", "--ttl", "1m", "--progress-timeout", timeout.String())
		acquired := time.Now()
		stalled := acquireHandle(t, g, "stalled", "--limit", "1", "--ttl", "1m", "--progress-timeout", "1s")
		var lastMark time.Time
		for i := 0; time.Since(acquired) <= timeout+500*time.Millisecond; i++ {
			time.Sleep(200 * time.Millisecond)
			step := "renew"
			if i%2 == 1 {
				step = "touch"
			}
			lastMark = time.Now()
			if code, _, errs := cli(t, append(g, step, lease)...); code != 0 {
				t.Fatalf("%s #%d in time (%v after the acquire): exit %d, %s", step, i, time.Since(acquired), code, errs)
			}
		}
		_, js, _ := cli(t, append(g, "slots", "heavy", "--json")...)
		sinceMark := time.Since(lastMark).Seconds()
		var sj view.Slots
		if err := json.Unmarshal([]byte(js), &sj); err != nil || len(sj.Resources) != 1 || len(sj.Resources[0].Holders) != 1 {
			t.Fatalf("slots --json: %v %s", err, js)
		}
		// The mark shown is the last one: no older than the time since it
		// was sent (the store's clock and ours are the machine's).
		h := sj.Resources[0].Holders[0]
		if h.ProgressAt == nil || h.ProgressSeconds == nil || *h.ProgressSeconds > sinceMark+0.01 || h.ProgressTimeoutSeconds != timeout.Seconds() {
			t.Fatalf("slots shows progress %v, age %v (the last mark was sent %.3fs before), timeout %v; want the last mark and %v",
				h.ProgressAt, h.ProgressSeconds, sinceMark, h.ProgressTimeoutSeconds, timeout.Seconds())
		}
		if _, text, _ := cli(t, append(g, "slots", "heavy")...); !strings.Contains(text, "PROGRESS") || !strings.Contains(text, " ago /5s") {
			t.Fatalf("slots text lacks the progress mark:\n%s", text)
		}
		for _, step := range []string{"renew", "touch"} {
			if code, _, errs := cli(t, append(g, step, stalled)...); code != 122 || !strings.Contains(errs, "no progress mark") {
				t.Fatalf("%s after the progress timeout: exit %d, %s; want 122", step, code, errs)
			}
		}
		// Still held until released: nobody else is granted it yet.
		if code, _, _ := cli(t, append(g, "acquire", "stalled", "--limit", "1")...); code != 73 {
			t.Fatalf("acquire beside a stalled lease: exit %d, want 73", code)
		}
		for _, l := range []string{stalled, lease} {
			if code, _, errs := cli(t, append(g, "release", l)...); code != 0 {
				t.Fatalf("release of %s: exit %d, %s", l, code, errs)
			}
		}
	})
}
