package main

import (
	"github.com/governor-dev/governor/internal/exitcode"
	"strings"
	"testing"
)

// `run --watchdog` is dispatched before any command is built; its bad
// forms still fail as governor's own failure, naming the run id.
func TestWatchdogArgs(t *testing.T) {
	for _, args := range [][]string{{"run", "--watchdog"}, {"run", "--watchdog", "a", "b"}} {
		code, out, errs := cli(t, args...)
		if code != exitcode.Failure || out != "" || !strings.Contains(errs, "--watchdog takes the run id") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 125 naming the run id", args, code, out, errs)
		}
	}
	// Anywhere else --watchdog is no flag of run.
	code, _, errs := cli(t, "run", "--resource", "x", "--watchdog", "id")
	if code != exitcode.Failure || !strings.Contains(errs, "unknown flag: --watchdog") {
		t.Errorf("run --resource x --watchdog id: exit %d, stderr %q; want 125, unknown flag", code, errs)
	}
}
