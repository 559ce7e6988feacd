package main

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/eventkind"
	"github.com/governor-dev/governor/governor/proc"
	"github.com/governor-dev/governor/internal/proctest"
)

// killNestedOuter runs `governor run heavy -- governor run inner -- sh -c
// script SLEEP`, where script starts two SLEEP 60, SIGKILLs the outer
// governor once both run, and fails t unless every process of both trees
// is then gone. It returns the target, for what the caller checks after,
// and the cgroups the outer and the inner run declared (none without).
func killNestedOuter(t *testing.T, script string) (*target, []string) {
	tg := fileTarget(t, "  inner: {limit: 1}\n")
	marker := proctest.NewMarker(t, "govrun")
	sleep := proctest.MarkedSleep(t, marker)
	t.Cleanup(func() { proctest.KillMarked(marker) })
	inner := append(append([]string{tg.bin}, tg.global()...), "run", "--resource", "inner", "--", "sh", "-c", script, sleep)
	c := tg.command(append([]string{"run", "--resource", "heavy", "--"}, inner...)...)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the inner tree did not start", func() bool { return len(proctest.Marked(sleep+"\x0060\x00")) == 2 })
	var groups []string
	var declared []governor.Holder
	g := tg.governor(t)
	for _, r := range []string{"heavy", "inner"} {
		for _, h := range tg.status(t, g, r).Holders {
			if h.Cgroup != "" {
				groups = append(groups, h.Cgroup)
			}
			declared = append(declared, h)
		}
	}
	if err := c.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = c.Wait()
	eventually(t, 10*time.Second, "processes of the nested trees outlived the outer governor", func() bool { return len(proctest.Marked(marker)) == 0 })
	// The watchdogs the leases declare (their pids) carry no marker: the
	// outer one sweeps the trees, then records what it did in the state
	// directory and exits, within its recording budget (5 s). The test
	// ends only after them, or the state directory's cleanup races
	// their last writes ("directory not empty").
	waitDeclaredGone(t, declared)
	return tg, groups
}

// SIGKILL of the outer governor of a nested run whose processes all carry
// the run ids (nothing cleared its environment): the outer watchdog's
// marker sweep finds the inner governor, its watchdog and the inner tree,
// setsid'd ones included, with or without cgroups. This is all macOS has
// (no cgroup), so it runs on every path, GOVERNOR_PORTABLE included.
func TestRunSIGKILLOfNestedGovernorsByMarkers(t *testing.T) {
	tg, _ := killNestedOuter(t, `setsid "$0" 60 & "$0" 60; :`)
	// The outer watchdog, gone, recorded its sweep on the heavy lease.
	evs, err := tg.governor(t).Events(context.Background(), "heavy", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	kills := 0
	for _, e := range evs {
		if e.Kind == eventkind.WatchdogKill {
			kills++
		}
	}
	if kills != 1 {
		t.Fatalf("%d %s events on heavy, want the outer watchdog's one: %+v", kills, eventkind.WatchdogKill, evs)
	}
	// The inner slot is free again: its holder was proven dead.
	eventually(t, 10*time.Second, "the inner slot did not become free", func() bool {
		code, _, _ := tg.run(t, "run", "--resource", "inner", "--", "true")
		return code == 0
	})
}

// waitDeclaredGone fails t unless every process the holders declare
// (pid and governor pid, by identity) has ended within 15 s: a watchdog
// lives on after governor's death until it has swept the tree and
// recorded it (within recordBudget, 5 s).
func waitDeclaredGone(t *testing.T, holders []governor.Holder) {
	t.Helper()
	for _, h := range holders {
		eventually(t, 15*time.Second, "a process the lease declared outlived its run", func() bool {
			return proc.Check(h.PID, h.StartTime) == proc.Dead &&
				(h.GovernorPID == 0 || proc.Check(h.GovernorPID, h.GovernorStart) == proc.Dead)
		})
	}
}

// killRun SIGKILLs the governor run c, which holds resource on tg, and
// reaps it. Before the test's temporary directories are removed, it waits
// (waitDeclaredGone) for the processes the run's lease declared: its
// watchdog records the kill in the state directory after governor's
// death, and a cleanup that races those writes fails with "directory not
// empty" (TestRunSIGKILLOfGovernorEscaped in a CI run).
func killRun(t *testing.T, tg *target, c *exec.Cmd, resource string) {
	t.Helper()
	declared := tg.status(t, tg.governor(t), resource).Holders
	if len(declared) == 0 {
		t.Fatalf("no holder of %s declared before the kill", resource)
	}
	// Registered after every TempDir of the test so far, so it runs
	// before their removal.
	t.Cleanup(func() { waitDeclaredGone(t, declared) })
	if err := c.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = c.Wait()
}
