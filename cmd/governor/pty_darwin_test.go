package main

import (
	"os"
	"testing"
)

// openPTY skips: x/sys/unix offers no ptsname (TIOCPTYGNAME fills a
// buffer) on macOS, so the terminal tests run on Linux only, where they
// run both ways (GOVERNOR_PORTABLE).
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	t.Skip("pseudo-terminal tests run on Linux")
	return nil, nil
}
