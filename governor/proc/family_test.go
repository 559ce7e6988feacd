package proc

import (
	"os"
	"os/exec"
	"slices"
	"testing"
)

func TestParentAndChildren(t *testing.T) {
	c := exec.Command("sleep", "30")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Process.Kill(); _ = c.Wait() }()
	if ppid, err := ParentPID(c.Process.Pid); err != nil || ppid != os.Getpid() {
		t.Errorf("ParentPID(child) = %d, %v; want %d", ppid, err, os.Getpid())
	}
	if kids := Children(os.Getpid()); !slices.Contains(kids, c.Process.Pid) {
		t.Errorf("Children(self) = %v; want it to hold %d", kids, c.Process.Pid)
	}
	if kids := Children(c.Process.Pid); len(kids) != 0 {
		t.Errorf("Children(sleep) = %v; want none", kids)
	}
	if _, err := ParentPID(1 << 30); err == nil {
		t.Error("ParentPID of a pid that cannot exist: no error")
	}
}
