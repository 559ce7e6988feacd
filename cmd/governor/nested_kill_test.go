package main

import (
	"testing"
	"time"

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
	g := tg.governor(t)
	for _, r := range []string{"heavy", "inner"} {
		for _, h := range tg.status(t, g, r).Holders {
			if h.Cgroup != "" {
				groups = append(groups, h.Cgroup)
			}
		}
	}
	if err := c.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = c.Wait()
	eventually(t, 10*time.Second, "processes of the nested trees outlived the outer governor", func() bool { return len(proctest.Marked(marker)) == 0 })
	return tg, groups
}

// SIGKILL of the outer governor of a nested run whose processes all carry
// the run ids (nothing cleared its environment): the outer watchdog's
// marker sweep finds the inner governor, its watchdog and the inner tree,
// setsid'd ones included, with or without cgroups. This is all macOS has
// (no cgroup), so it runs on every path, GOVERNOR_PORTABLE included.
func TestRunSIGKILLOfNestedGovernorsByMarkers(t *testing.T) {
	tg, _ := killNestedOuter(t, `setsid "$0" 60 & "$0" 60; :`)
	// The inner slot is free again: its holder was proven dead.
	eventually(t, 10*time.Second, "the inner slot did not become free", func() bool {
		code, _, _ := tg.run(t, "run", "--resource", "inner", "--", "true")
		return code == 0
	})
}
