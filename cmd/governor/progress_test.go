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
// 122 (outcome lease_lost) and its slot is then free.
func TestRunProgressTimeout(t *testing.T) {
	runTargets(t, "lease: {ttl: 3s}\n", func(t *testing.T, tg *target) {
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
// kept by renew (a mark) and touch, lost once neither came in time
// (renew and touch exit 122), and slots shows its last mark.
func TestAcquireProgressTimeout(t *testing.T) {
	backends(t, func(t *testing.T, g []string) {
		lease := acquireHandle(t, g, "heavy", "--limit", "1", "--ttl", "1m", "--progress-timeout", "1500ms")
		for i := 0; i < 3; i++ {
			time.Sleep(600 * time.Millisecond)
			step := "renew"
			if i == 1 {
				step = "touch"
			}
			if code, _, errs := cli(t, append(g, step, lease)...); code != 0 {
				t.Fatalf("%s #%d in time: exit %d, %s", step, i, code, errs)
			}
		}
		_, js, _ := cli(t, append(g, "slots", "heavy", "--json")...)
		var sj view.Slots
		if err := json.Unmarshal([]byte(js), &sj); err != nil || len(sj.Resources) != 1 || len(sj.Resources[0].Holders) != 1 {
			t.Fatalf("slots --json: %v %s", err, js)
		}
		h := sj.Resources[0].Holders[0]
		if h.ProgressAt == nil || h.ProgressSeconds == nil || *h.ProgressSeconds > 1 || h.ProgressTimeoutSeconds != 1.5 {
			t.Fatalf("slots shows progress %v, age %v, timeout %v; want a recent mark and 1.5", h.ProgressAt, h.ProgressSeconds, h.ProgressTimeoutSeconds)
		}
		if _, text, _ := cli(t, append(g, "slots", "heavy")...); !strings.Contains(text, "PROGRESS") || !strings.Contains(text, " ago /1s") {
			t.Fatalf("slots text lacks the progress mark:\n%s", text)
		}
		time.Sleep(2 * time.Second)
		for _, step := range []string{"renew", "touch"} {
			if code, _, errs := cli(t, append(g, step, lease)...); code != 122 || !strings.Contains(errs, "no progress mark") {
				t.Fatalf("%s after the progress timeout: exit %d, %s; want 122", step, code, errs)
			}
		}
		// Still held until released: nobody else is granted it yet.
		if code, _, _ := cli(t, append(g, "acquire", "heavy", "--limit", "1")...); code != 73 {
			t.Fatalf("acquire beside a stalled lease: exit %d, want 73", code)
		}
		if code, _, errs := cli(t, append(g, "release", lease)...); code != 0 {
			t.Fatalf("release of the stalled lease: exit %d, %s", code, errs)
		}
	})
}
