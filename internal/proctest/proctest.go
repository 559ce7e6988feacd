// Package proctest finds and ends the processes a test started, by a
// marker in their command line, and builds the governor binary for tests
// that run it as a real process, and reads the pages of servers it
// started (Get).
package proctest

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/governor-dev/governor/governor/proc"
)

// Marked returns the living processes whose command line contains
// marker, the calling process excluded. Zombies have an empty command
// line and are not counted.
func Marked(marker string) []int {
	var pids []int
	all, _ := proc.List()
	for _, p := range all {
		if p.PID != os.Getpid() && !p.Zombie() && bytes.Contains(cmdline(p.PID), []byte(marker)) {
			pids = append(pids, p.PID)
		}
	}
	return pids
}

// KillMarked sends SIGKILL to what a failed test left behind, under each
// process's identity (proc.Kill) and after checking the marker again, so
// that a reused pid is never hit.
func KillMarked(marker string) {
	for _, pid := range Marked(marker) {
		start, err := proc.StartTime(pid)
		if err == nil && bytes.Contains(cmdline(pid), []byte(marker)) {
			_ = proc.Kill(pid, start, unix.SIGKILL)
		}
	}
}

// BuildGovernor builds the governor CLI (without -race: it is the program
// under test, not the test) into dir and returns its path.
func BuildGovernor(dir string) (string, error) {
	return BuildGovernorAs(dir, "governor")
}

// BuildGovernorAs is BuildGovernor into dir/name, with env added to the
// go command's environment (CGO_ENABLED=0 for a binary without cgo).
func BuildGovernorAs(dir, name string, env ...string) (string, error) {
	p := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-o", p, "github.com/governor-dev/governor/cmd/governor")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("building governor %s: %v\n%s", strings.Join(env, " "), err, out)
	}
	return p, nil
}

// NewMarker returns prefix followed by 12 random hex digits: a string
// unique to one test, to find its processes by their command lines.
func NewMarker(t testing.TB, prefix string) string {
	t.Helper()
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return prefix + hex.EncodeToString(b[:])
}

// MarkedSleep returns the path of a sleep(1) whose name carries marker,
// so that every sleep a test starts shows in its command line.
func MarkedSleep(t testing.TB, marker string) string {
	t.Helper()
	bin, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep(1)")
	}
	p := filepath.Join(t.TempDir(), "sleep-"+marker)
	if err := os.Symlink(bin, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// Binary is the governor CLI of a test binary, built on first use into a
// directory of its own; TestMain calls Remove when the tests end.
type Binary struct {
	// Env, if set, is added to the go command's environment, as
	// BuildGovernorAs's (GOFLAGS=-tags=... for another build).
	Env []string

	once sync.Once
	dir  string
	path string
	err  error
}

// Path builds the binary on the first call and returns its path, failing
// t when it cannot be built.
func (b *Binary) Path(t testing.TB) string {
	t.Helper()
	b.once.Do(func() {
		b.dir, b.err = os.MkdirTemp("", "governor-bin-")
		if b.err == nil {
			b.path, b.err = BuildGovernorAs(b.dir, "governor", b.Env...)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// Remove deletes the binary's directory, if it was built.
func (b *Binary) Remove() {
	if b.dir != "" {
		os.RemoveAll(b.dir)
	}
}

// WaitExit waits up to within for c to end and returns its exit code (-1
// when a signal ended it), failing t when it does not end in time, or
// when waiting fails for another reason than its exit; stderr, when not
// nil, is what the failure shows of it.
func WaitExit(t testing.TB, c *exec.Cmd, within time.Duration, stderr fmt.Stringer) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return c.ProcessState.ExitCode()
	case <-time.After(within):
		if stderr != nil {
			t.Fatalf("%s did not end within %v; stderr:\n%s", c.Path, within, stderr)
		}
		t.Fatalf("%s did not end within %v", c.Path, within)
	}
	return -1
}
