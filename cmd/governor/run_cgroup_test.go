package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor/proc"
	"github.com/governor-dev/governor/internal/exitcode"
	"github.com/governor-dev/governor/internal/proctest"
)

// startWatchedRun starts `governor run --resource heavy -- sh -c script
// SLEEP PIDFILE` on tg, where script writes to PIDFILE (through
// PIDFILE.tmp) the pid of a process of the command that stays in the
// run's cgroup, and returns governor and the run's cgroup once that
// process runs. Processes of the marker are killed at the end.
func startWatchedRun(t *testing.T, tg *target, script string) (*exec.Cmd, string, int) {
	t.Helper()
	marker := proctest.NewMarker(t, "govrun")
	sleep := proctest.MarkedSleep(t, marker)
	t.Cleanup(func() { proctest.KillMarked(marker) })
	pidFile := filepath.Join(t.TempDir(), "pid")
	c := tg.command("run", "--resource", "heavy", "--", "sh", "-c", script, sleep, pidFile)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	var pid int
	eventually(t, 10*time.Second, "the command did not start", func() bool {
		b, err := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	})
	group := runCgroup(t, tg, "heavy", pid)
	t.Cleanup(func() { _ = proc.KillCgroup(group); _ = proc.RemoveCgroup(group, time.Second) })
	return c, group, pid
}

// killGovernorAndWatchdog stops governor c and the watchdog that its
// lease of heavy declares, so that neither can react, calls inBetween
// (which ends what the test wants ended of the command), then SIGKILLs
// both and returns once both are gone: nobody is left to clean up after
// the run.
func killGovernorAndWatchdog(t *testing.T, tg *target, c *exec.Cmd, inBetween func()) {
	t.Helper()
	h := tg.status(t, tg.governor(t), "heavy").Holders[0]
	if h.GovernorPID != c.Process.Pid || h.PID == c.Process.Pid {
		t.Fatalf("want the watchdog declared as holder beside governor %d: %+v", c.Process.Pid, h.Declaration)
	}
	watchdog := h.PID
	// Both stopped for good before inBetween: a governor whose SIGSTOP
	// is still pending would see its command end, remove the run's
	// cgroup and end its watchdog (proctest.Stop).
	proctest.Stop(t, c.Process.Pid, h.GovernorStart)
	proctest.Stop(t, watchdog, h.StartTime)
	inBetween()
	if err := proc.Kill(watchdog, h.StartTime, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = c.Process.Kill()
	_ = c.Wait()
	eventually(t, 10*time.Second, "the watchdog outlived SIGKILL", func() bool { return proc.Check(watchdog, h.StartTime) == proc.Dead })
}

// writePID is the start of a script for startWatchedRun: it writes the
// shell's pid to the pid file ("$1").
const writePID = `echo $$ >"$1.tmp" && mv "$1.tmp" "$1" && `

// Issue 18 point 13: governor, its watchdog and its command all SIGKILLed
// (nobody is left to clean up) leave the run's cgroup behind, empty. The
// next run on the resource proves the owner dead, takes the slot and
// removes the group at once — not a minute later (the stale sweep). On
// the file backend the proof is the lease file's (the backend's own
// reclaim), on Redis the declared pids' (Governor's).
func TestRunCgroupRemovedByReclaim(t *testing.T) {
	runCgroupsOrSkip(t)
	runTargets(t, "", func(t *testing.T, tg *target) {
		c, group, _ := startWatchedRun(t, tg, writePID+`exec "$0" 600`)
		killGovernorAndWatchdog(t, tg, c, func() {
			if err := proc.KillCgroup(group); err != nil {
				t.Fatal(err)
			}
			eventually(t, 10*time.Second, "the command outlived its cgroup's kill", func() bool { return !proc.CgroupPopulated(group) })
		})
		if cgroupGone(group) {
			t.Fatalf("the run's cgroup %s went although nobody was left to remove it", group)
		}
		code, _, errs := tg.run(t, "run", "--resource", "heavy", "--", "true")
		if code != 0 {
			t.Fatalf("the next run: exit %d, want 0 (the dead run's slot reclaimed): %s", code, errs)
		}
		if !cgroupGone(group) {
			t.Fatalf("the dead run's cgroup %s is left after the next run reclaimed its slot", group)
		}
	})
}

// A process of the run's cgroup keeps the slot after governor and its
// watchdog are killed, even one that no marker finds (env -i) and that
// closed the lease files it inherited (file backend): the file backend's
// reclaim by the lease file asks the tree's proof of life too
// (Declaration.OwnerVerdict). Once it ends, the next run gets the slot
// and the group is removed.
func TestRunCgroupKeepsSlotWithoutLeaseFile(t *testing.T) {
	runCgroupsOrSkip(t)
	runTargets(t, "", func(t *testing.T, tg *target) {
		c, group, daemon := startWatchedRun(t, tg,
			`env -i setsid sh -c 'exec 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- && `+writePID+`exec "$0" 600' "$0" "$1" </dev/null >/dev/null 2>&1 & exec "$0" 601`)
		if fds, _ := filepath.Glob("/proc/" + strconv.Itoa(daemon) + "/fd/*"); len(fds) == 0 {
			t.Fatalf("cannot read the descriptors of pid %d", daemon)
		} else {
			for _, fd := range fds {
				if to, _ := os.Readlink(fd); strings.Contains(to, "lease.") {
					t.Fatalf("the worker still holds a lease file: %s -> %s", fd, to)
				}
			}
		}
		start, err := proc.StartTime(daemon)
		if err != nil {
			t.Fatal(err)
		}
		killGovernorAndWatchdog(t, tg, c, func() {
			for _, pid := range proctest.Marked("\x00601\x00") {
				if in, _ := proc.CgroupOf(pid); in == group {
					_ = syscall.Kill(pid, syscall.SIGKILL) // the leader, in the run's group
				}
			}
		})
		if !proc.CgroupPopulated(group) {
			t.Fatalf("the worker is gone from the run's cgroup %s", group)
		}
		code, _, errs := tg.run(t, "run", "--resource", "heavy", "--if-busy", "fail", "--", "true")
		if code != exitcode.Busy {
			t.Fatalf("a run while a process of the dead run's cgroup works on: exit %d, want %d (busy): %s", code, exitcode.Busy, errs)
		}
		if err := proc.Kill(daemon, start, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, "the worker outlived SIGKILL", func() bool { return !proc.CgroupPopulated(group) })
		code, _, errs = tg.run(t, "run", "--resource", "heavy", "--if-busy", "fail", "--", "true")
		if code != 0 {
			t.Fatalf("the next run once the dead run's cgroup is empty: exit %d, want 0: %s", code, errs)
		}
		if !cgroupGone(group) {
			t.Fatalf("the dead run's cgroup %s is left after the next run reclaimed its slot", group)
		}
	})
}
