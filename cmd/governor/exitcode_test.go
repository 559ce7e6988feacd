package main

import (
	"bytes"
	"fmt"
	"regexp"
	"testing"

	"github.com/governor-dev/governor/internal/exitcode"
)

// TestExitCodesRootHelpListsEvery: the root --help's table names every
// exit code of package exitcode but 0 (76 was missing).
func TestExitCodesRootHelpListsEvery(t *testing.T) {
	var out bytes.Buffer
	if code := Main([]string{"--help"}, nil, &out, &out); code != 0 {
		t.Fatalf("--help exited %d: %s", code, out.String())
	}
	for _, c := range []int{exitcode.Busy, exitcode.Skipped, exitcode.Superseded, exitcode.LeaseLost,
		exitcode.Timeout, exitcode.Failure, exitcode.CannotExec, exitcode.NotFound} {
		if !regexp.MustCompile(fmt.Sprintf(`(?m)^  %d  `, c)).MatchString(out.String()) {
			t.Errorf("root --help lists no exit code %d (%s):\n%s", c, exitcode.Kind(c), out.String())
		}
	}
}
