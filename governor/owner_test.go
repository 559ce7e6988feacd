package governor_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/filebackend"
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

// runCgroup makes the cgroup of run id beside the test's own, removed at
// the end; it skips t where there is no cgroup v2 or it cannot make one.
func runCgroup(t *testing.T, id string) string {
	t.Helper()
	dir, ok := proc.ChildCgroup(proc.RunCgroupName(id))
	if !ok {
		t.Skip("no cgroup v2 hierarchy here")
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("cannot make a cgroup here (as root it can): %v", err)
	}
	t.Cleanup(func() { _ = proc.RemoveCgroup(dir, time.Second) })
	return dir
}

// TestRemoveDeadCgroup: the group of a dead run goes, with the groups of
// runs nested in it, only when it is the run's group in the caller's own
// group, on the declared host, and empty.
func TestRemoveDeadCgroup(t *testing.T) {
	self := proc.Current()
	id := fmt.Sprintf("test-%d-%d", os.Getpid(), time.Now().UnixNano())
	dir := runCgroup(t, id)
	exists := func() bool { _, err := os.Stat(dir); return err == nil }
	run := governor.Declaration{HostID: self.HostID, Cgroup: dir, RunID: id}

	// A directory of that name that is not in the caller's group (here,
	// not a cgroup at all) is never removed.
	elsewhere := filepath.Join(t.TempDir(), proc.RunCgroupName(id))
	if err := os.Mkdir(elsewhere, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, d := range map[string]governor.Declaration{
		"declared elsewhere": {HostID: self.HostID, Cgroup: elsewhere, RunID: id},
		"another run's id":   {HostID: self.HostID, Cgroup: dir, RunID: id + "x"},
		"another host":       {HostID: "elsewhere", Cgroup: dir, RunID: id},
		"no run id":          {HostID: self.HostID, Cgroup: dir},
	} {
		if err := d.RemoveDeadCgroup(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if _, err := os.Stat(elsewhere); err != nil || !exists() {
			t.Fatalf("%s: a group was removed (elsewhere: %v; the run's group there: %v)", name, err, exists())
		}
	}

	// Populated: kept, and said.
	sleep := exec.Command("sleep", "60")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sleep.Process.Kill(); _ = sleep.Wait() })
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(sleep.Process.Pid)), 0); err != nil {
		t.Fatal(err)
	}
	if err := run.RemoveDeadCgroup(); err == nil || !exists() {
		t.Fatalf("a populated group: %v; exists %v", err, exists())
	}
	_ = sleep.Process.Kill()
	_ = sleep.Wait()

	// Empty, with the empty group of a nested run inside: both go.
	if err := os.Mkdir(filepath.Join(dir, proc.RunCgroupName("nested")), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := run.RemoveDeadCgroup(); err != nil || exists() {
		t.Fatalf("the empty group of a dead run: %v; exists %v", err, exists())
	}
	if err := run.RemoveDeadCgroup(); err != nil {
		t.Fatalf("a group already gone: %v", err)
	}
}

// TestDeadRunCgroupGoesWithItsLease: the lease of a run whose declared
// processes are dead (and whose lease file proves nothing: detached) is
// reclaimed by the next acquire, or taken over without force, and its
// empty cgroup goes with it.
func TestDeadRunCgroupGoesWithItsLease(t *testing.T) {
	for _, how := range []string{"reclaim", "takeover"} {
		t.Run(how, func(t *testing.T) {
			ctx := context.Background()
			id := fmt.Sprintf("test-%s-%d-%d", how, os.Getpid(), time.Now().UnixNano())
			dir := runCgroup(t, id)
			state := t.TempDir()
			open := func(o governor.Options) *governor.Governor {
				fb, err := filebackend.New(state, filebackend.Options{})
				if err != nil {
					t.Fatal(err)
				}
				o.Project = "p"
				g, err := governor.New(fb, o)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { g.Close() })
				return g
			}
			owner := exec.Command("sleep", "60")
			if err := owner.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = owner.Process.Kill(); _ = owner.Wait() })
			run := open(governor.Options{PID: owner.Process.Pid, Cgroup: dir, RunID: id})
			l, err := run.Acquire(ctx, "r", governor.AcquireOptions{Limit: 1})
			if err != nil {
				t.Fatal(err)
			}
			l.Detach()
			run.Close() // its backend lets go of the lease file: it proves nothing now
			_ = owner.Process.Kill()
			_ = owner.Wait()

			next := open(governor.Options{})
			if how == "reclaim" {
				_, err = next.Acquire(ctx, "r", governor.AcquireOptions{Limit: 1, Mode: governor.Fail})
			} else {
				_, err = next.Takeover(ctx, "r", 1, governor.TakeoverOptions{LeaseID: l.ID()})
			}
			if err != nil {
				t.Fatalf("%s of the dead run's lease: %v", how, err)
			}
			if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the dead run's cgroup is left after the %s of its lease: %v", how, err)
			}
		})
	}
}
