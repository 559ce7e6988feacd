package governor_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/proc"
)

// A holder's processes are named for what they are: the declared pid; no
// process (a lease that lives by its TTL); or a governor run's own pid,
// its command's and its watchdog's — never the watchdog alone.
func TestDeclarationProcesses(t *testing.T) {
	start := func(t *testing.T) *exec.Cmd {
		c := exec.Command("sleep", "30")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
		return c
	}
	// This test process plays governor run: a watchdog child, then a
	// command child.
	wd, cmd := start(t), start(t)
	wdStart, err := proc.StartTime(wd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	self := os.Getpid()
	run := governor.Declaration{HostID: proc.HostID(), PID: wd.Process.Pid, StartTime: wdStart, GovernorPID: self}
	elsewhere := run
	elsewhere.HostID = "another-host"
	for _, tc := range []struct {
		name string
		d    governor.Declaration
		want string
	}{
		{"pid", governor.Declaration{PID: 77}, "pid 77"},
		{"none", governor.Declaration{}, "no process declared"},
		{"run", run, fmt.Sprintf("governor pid %d, command pid %d, watchdog pid %d", self, cmd.Process.Pid, wd.Process.Pid)},
		{"run elsewhere", elsewhere, fmt.Sprintf("governor pid %d, watchdog pid %d", self, wd.Process.Pid)},
	} {
		if got := tc.d.Processes(); got != tc.want {
			t.Errorf("%s: Processes() = %q, want %q", tc.name, got, tc.want)
		}
	}
	// A watchdog that is gone proves nothing about the governor pid.
	_ = wd.Process.Kill()
	_ = wd.Wait()
	if got := run.CommandPID(); got != 0 {
		t.Errorf("CommandPID with the watchdog gone = %d, want 0", got)
	}

	// Records stored before GovernorPID existed read as before.
	var old governor.Declaration
	if err := json.Unmarshal([]byte(`{"session":"s","host":"h","pid":42,"start":7,"cmd":"x"}`), &old); err != nil {
		t.Fatal(err)
	}
	if old.GovernorPID != 0 || old.Processes() != "pid 42" {
		t.Errorf("old record: %+v, %q", old, old.Processes())
	}
}
