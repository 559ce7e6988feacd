package main

import (
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// initLine is a line of GODEBUG=inittrace=1: "init PKG @T ms, C ms clock, B bytes, A allocs".
var initLine = regexp.MustCompile(`^init (\S+) @.* ms clock, (\d+) bytes, \d+ allocs$`)

// TestInitBuildsNoScripts: a start of the binary (both processes of a
// `governor run` pay it) does not build the Redis scripts; the file
// backend never runs them, and Redis builds each at its first call.
// Counted in bytes allocated by the package's init, not timed.
func TestInitBuildsNoScripts(t *testing.T) {
	c := exec.Command(governorBin(t), "--version")
	c.Env = append(cleanEnv(), "GODEBUG=inittrace=1")
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("governor --version: %v: %s", err, out)
	}
	found := false
	for _, line := range strings.Split(string(out), "\n") {
		m := initLine.FindStringSubmatch(line)
		if m == nil || m[1] != "github.com/governor-dev/governor/scripts-lua" {
			continue
		}
		found = true
		// The lazy wrappers cost a few closures; one built script alone
		// is some 60 kB.
		if n, _ := strconv.Atoi(m[2]); n > 16<<10 {
			t.Errorf("scripts-lua's init allocated %d bytes, want under 16 kB (the scripts are built at package init): %s", n, line)
		}
	}
	if !found && !strings.Contains(string(out), "init runtime") {
		t.Fatalf("no inittrace output from GODEBUG=inittrace=1: %s", out)
	}
	// Found nowhere in a trace: the package has no init left at all.
}
