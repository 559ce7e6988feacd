package proctest

import (
	"bufio"
	"errors"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor/proc"
)

// StoppedLockHolder starts flock(1) holding an exclusive flock on the
// file at path, as a process stopped inside a file-backend state write
// holds a resource's lock, stops it (SIGSTOP) and returns its pid; the
// test's cleanup kills it and the child it runs. The test is skipped
// where the holder of a lock cannot be told (no /proc/locks: macOS) or
// flock(1) is missing, and fails unless /proc/locks shows the pid
// returned holding the lock.
func StoppedLockHolder(t testing.TB, path string) int {
	t.Helper()
	bin, err := exec.LookPath("flock")
	if _, lerr := proc.Locks(); errors.Is(lerr, errors.ErrUnsupported) || err != nil {
		t.Skip("needs /proc/locks (Linux) and flock(1)")
	}
	c := exec.Command(bin, "--exclusive", path, "-c", "echo locked; exec sleep 600")
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	pid := c.Process.Pid
	t.Cleanup(func() {
		_ = syscall.Kill(-pid, syscall.SIGKILL) // its own group: flock and its sleep
		_ = c.Wait()
	})
	if line, err := bufio.NewReader(out).ReadString('\n'); line != "locked\n" {
		t.Fatalf("flock %s said %q (%v)", path, line, err)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if s, err := proc.Stat(pid); err == nil && s.Stopped() {
			mustHoldFlock(t, pid, path)
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("flock (pid %d) not stopped after a minute", pid)
		}
	}
}

// mustHoldFlock fails t unless /proc/locks shows pid holding an exclusive
// flock on the file at path: what the tests of a stopped holder name.
func mustHoldFlock(t testing.TB, pid int, path string) {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	locks, err := proc.Locks()
	for _, l := range locks {
		if l.Kind == proc.Flock && l.Mode == proc.LockWrite && l.PID == pid && l.Inode == st.Ino {
			return
		}
	}
	t.Fatalf("/proc/locks shows no exclusive flock of pid %d on %s (inode %d): %+v (%v)", pid, path, st.Ino, locks, err)
}
