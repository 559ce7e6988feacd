// Package proctest finds and ends the processes a test started, by a
// marker in their command line, and builds the governor binary for tests
// that run it as a real process.
package proctest

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// Marked returns the living processes whose command line contains
// marker, the calling process excluded. Zombies have an empty command
// line and are not counted.
func Marked(marker string) []int {
	var pids []int
	names, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil || !bytes.Contains(b, []byte(marker)) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(n)))
		if pid != os.Getpid() {
			pids = append(pids, pid)
		}
	}
	return pids
}

// KillMarked sends SIGKILL to what a failed test left behind, through
// pidfds and after checking the marker again, so that a reused pid is
// never hit.
func KillMarked(marker string) {
	for _, pid := range Marked(marker) {
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if err == nil && bytes.Contains(b, []byte(marker)) {
			_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
		}
		unix.Close(fd)
	}
}

// BuildGovernor builds the governor CLI (without -race: it is the program
// under test, not the test) into dir and returns its path.
func BuildGovernor(dir string) (string, error) {
	p := filepath.Join(dir, "governor")
	out, err := exec.Command("go", "build", "-o", p, "github.com/governor-dev/governor/cmd/governor").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("building governor: %v\n%s", err, out)
	}
	return p, nil
}

// NewMarker returns prefix followed by 12 random hex digits: a string
// unique to one test, to find its processes in /proc/*/cmdline.
func NewMarker(t testing.TB, prefix string) string {
	t.Helper()
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return prefix + hex.EncodeToString(b[:])
}

// MarkedSleep returns the path of a sleep(1) whose name carries marker,
// so that every sleep a test starts shows in /proc/*/cmdline.
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
