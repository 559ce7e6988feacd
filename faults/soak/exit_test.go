//go:build linux

package main

import (
	"context"
	"os/exec"
	"testing"
)

// TestExitOfNotStartedAtTheEnd: a command whose context (the load's)
// ended before it started is no failure to start (a short soak on a
// loaded machine reported "start: admin limit: context deadline
// exceeded" at 120.037 s, the end of its load); any other start error
// still is.
func TestExitOfNotStartedAtTheEnd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 0)
	defer cancel()
	<-ctx.Done()
	s := &soak{}
	c := exec.CommandContext(ctx, "true")
	s.exitOf("admin limit", c, c.Start(), "")
	if n := s.violationCount(); n != 0 {
		t.Fatalf("%d violations: %q", n, s.violations)
	}
	if s.ops["admin limit not started: the load ended"] != 1 {
		t.Fatalf("ops %v", s.ops)
	}
	c = exec.Command("/nonexistent/governor")
	s.exitOf("admin limit", c, c.Start(), "")
	if s.violationCount() != 1 {
		t.Fatalf("a command that cannot start: violations %q", s.violations)
	}
}
