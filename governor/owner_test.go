package governor_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/proc"
)

// TestOwnerVerdict: a `governor run` declaration is dead only when the
// watchdog, governor, the run's cgroup and every process marked with the
// run id are all gone.
func TestOwnerVerdict(t *testing.T) {
	self := proc.Current()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	deadPID := dead.Process.Pid

	// A process carrying run id "r1" (as a command tree's do).
	marked := exec.Command("sleep", "60")
	marked.Env = append(os.Environ(), governor.EnvRunIDs+"=outer r1")
	if err := marked.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = marked.Process.Kill(); _ = marked.Wait() })

	cgroups := t.TempDir()
	populated := filepath.Join(cgroups, "governor-run-a")
	empty := filepath.Join(cgroups, "governor-run-b")
	for dir, events := range map[string]string{populated: "populated 1\nfrozen 0\n", empty: "populated 0\nfrozen 0\n"} {
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "cgroup.events"), []byte(events), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	run := governor.Declaration{HostID: self.HostID, PID: deadPID}
	cases := []struct {
		name string
		edit func(d *governor.Declaration)
		want proc.Verdict
	}{
		{"watchdog dead", func(d *governor.Declaration) {}, proc.Dead},
		{"watchdog alive", func(d *governor.Declaration) { d.PID, d.StartTime = self.PID, self.StartTime }, proc.Alive},
		{"governor alive", func(d *governor.Declaration) { d.GovernorPID, d.GovernorStart = self.PID, self.StartTime }, proc.Alive},
		{"governor dead", func(d *governor.Declaration) { d.GovernorPID, d.GovernorStart = deadPID, 1 }, proc.Dead},
		{"governor without start (older record): shown only", func(d *governor.Declaration) { d.GovernorPID = self.PID }, proc.Dead},
		{"governor pid reused", func(d *governor.Declaration) { d.GovernorPID, d.GovernorStart = self.PID, self.StartTime+1 }, proc.Dead},
		{"cgroup populated", func(d *governor.Declaration) { d.Cgroup = populated }, proc.Alive},
		{"cgroup empty", func(d *governor.Declaration) { d.Cgroup = empty }, proc.Dead},
		{"cgroup removed", func(d *governor.Declaration) { d.Cgroup = filepath.Join(cgroups, "gone") }, proc.Dead},
		{"a process carries the run id", func(d *governor.Declaration) { d.RunID = "r1" }, proc.Alive},
		{"no process carries the run id", func(d *governor.Declaration) { d.RunID = "r2" }, proc.Dead},
		{"other host", func(d *governor.Declaration) { d.HostID = "elsewhere" }, proc.Unknown},
		{"no pid", func(d *governor.Declaration) { d.PID = 0 }, proc.Unknown},
	}
	for _, c := range cases {
		d := run
		c.edit(&d)
		if got := d.OwnerVerdict(); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
