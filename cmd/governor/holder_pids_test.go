package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor/proc"
	"github.com/governor-dev/governor/internal/exitcode"
	"github.com/governor-dev/governor/internal/view"
)

// slots and refusals show a governor run's own pid and its command's,
// marked, beside its watchdog (the pid whose death frees the slot); a
// lease taken without --pid shows that no process is declared, not pid 0.
func TestHolderProcessesShown(t *testing.T) {
	runTargets(t, "", testHolderProcessesShown)
}

func testHolderProcessesShown(t *testing.T, tg *target) {
	c := tg.command("run", "--resource", "heavy", "--", "sleep", "30")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Process.Signal(os.Interrupt); _ = c.Wait() }()
	gpid := c.Process.Pid
	var (
		h               view.Holder
		sleep, watchdog int
	)
	eventually(t, 20*time.Second, "the run holds heavy and its command is sleep", func() bool {
		code, out, _ := cli(t, append(tg.global(), "--json", "slots", "heavy")...)
		var sj view.Slots
		if code != 0 || json.Unmarshal([]byte(out), &sj) != nil || len(sj.Resources[0].Holders) != 1 {
			return false
		}
		h = sj.Resources[0].Holders[0]
		sleep, watchdog = 0, 0
		for _, k := range proc.Children(gpid) {
			b, _ := os.ReadFile("/proc/" + strconv.Itoa(k) + "/cmdline")
			switch args := strings.Split(string(b), "\x00"); {
			case args[0] == "sleep":
				sleep = k
			case len(args) > 2 && args[2] == "--watchdog":
				watchdog = k
			}
		}
		// slots read before the command started shows no command pid:
		// look again.
		return sleep != 0 && watchdog != 0 && h.CommandPID != 0
	})
	if h.GovernorPID != gpid || h.CommandPID != sleep || h.PID != watchdog || sleep == 0 || watchdog == 0 {
		t.Errorf("holder governor_pid %d, command_pid %d, pid %d; want governor %d, command (sleep) %d, watchdog %d",
			h.GovernorPID, h.CommandPID, h.PID, gpid, sleep, watchdog)
	}
	want := fmt.Sprintf("governor pid %d, command pid %d, watchdog pid %d", gpid, sleep, watchdog)
	if h.Processes != want {
		t.Errorf("processes %q, want %q", h.Processes, want)
	}
	if code, out, _ := cli(t, append(tg.global(), "slots", "heavy")...); code != 0 || !strings.Contains(out, want) {
		t.Errorf("slots heavy:\n%s\nlacks %q", out, want)
	}
	if code, _, errs := cli(t, append(tg.global(), "acquire", "heavy")...); code != exitcode.Busy || !strings.Contains(errs, "("+want+" on ") {
		t.Errorf("refusal: exit %d, %q; want 73 naming %q", code, errs, want)
	}

	// acquire without --pid declares no process.
	if code, _, errs := cli(t, append(tg.global(), "acquire", "gpu", "--limit", "1")...); code != 0 {
		t.Fatalf("acquire gpu: exit %d %s", code, errs)
	}
	code, _, errs := cli(t, append(tg.global(), "acquire", "gpu", "--limit", "1")...)
	if code != exitcode.Busy || !strings.Contains(errs, "(no process declared on ") || strings.Contains(errs, "pid 0") {
		t.Errorf("refusal of gpu: exit %d, %q; want 73 saying no process is declared", code, errs)
	}
	if code, out, _ := cli(t, append(tg.global(), "slots", "gpu")...); code != 0 || !strings.Contains(out, "no process declared") {
		t.Errorf("slots gpu:\n%s\nwant 'no process declared'", out)
	}
}
