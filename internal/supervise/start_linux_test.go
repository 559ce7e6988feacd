package supervise

import (
	"os/exec"
	"testing"

	"golang.org/x/sys/unix"
)

func TestChildInfo(t *testing.T) {
	c := exec.Command("sh", "-c", "exit 7")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, c.Process.Pid, &info, unix.WEXITED, nil); err != nil {
		t.Fatal(err)
	}
	if pid, status := childInfo(&info); int(pid) != c.Process.Pid || status != 7 {
		t.Fatalf("childInfo = pid %d status %d; want %d and 7", pid, status, c.Process.Pid)
	}
}
