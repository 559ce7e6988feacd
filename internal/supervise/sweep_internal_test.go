//go:build linux

package supervise

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor/proc"
)

// zombieChild starts a command that exits at once and returns its pid
// once it is a zombie child of this process, unreaped.
func zombieChild(t *testing.T) int {
	t.Helper()
	c := exec.Command("true")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	pid := c.Process.Pid
	deadline := time.Now().Add(10 * time.Second)
	for {
		if s, err := proc.Stat(pid); err == nil && s.Zombie() {
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d did not become a zombie", pid)
		}
		time.Sleep(time.Millisecond)
	}
}

// A sweep after the leader's exit, with the tree's own cgroup empty, reads
// this process's children only, not every process on the machine, reaps
// the leader and finishes the tree. Where the group is not empty (or
// there is none), it lists every process.
func TestEmptyGroupSweepReadsChildrenOnly(t *testing.T) {
	if len(proc.Children(os.Getpid())) == 0 {
		if _, err := os.Stat("/proc/self/task"); err != nil {
			t.Skip("no /proc")
		}
	}
	dir, ok := proc.ChildCgroup("governor-test-sweep-" + uniqueSuffix())
	if !ok || os.Mkdir(dir, 0o755) != nil {
		t.Skip("no cgroup v2 group can be made here")
	}
	t.Cleanup(func() { _ = os.Remove(dir) })

	lists := 0
	old := listProcesses
	listProcesses = func() ([]proc.Info, error) {
		lists++
		return old()
	}
	defer func() { listProcesses = old }()

	pid := zombieChild(t)
	if !contains(proc.Children(os.Getpid()), pid) {
		t.Skip("the kernel does not list children (CONFIG_PROC_CHILDREN)")
	}
	tr := &Tree{id: "sweep-test-" + uniqueSuffix(), pid: pid, leaderStart: startOf(t, pid), portable: proc.Portable(), cg: &cgroup{dir: dir, fd: -1},
		members:  map[int]*member{pid: {pid: pid, pgid: pid, fd: -1, leader: true}},
		unmarked: map[int]uint64{}, leaderExited: true}
	if !tr.sweep() {
		t.Fatal("the sweep did not finish a tree whose leader exited and whose group is empty")
	}
	if lists != 0 {
		t.Errorf("the sweep listed every process %d times; with the group empty it needs only this process's children", lists)
	}
	if _, err := proc.Stat(pid); err == nil {
		t.Errorf("the leader %d was not reaped", pid)
	}

	// Woken by the leader's SIGCHLD before its exit is marked: the tree
	// is not finished yet, but the group is empty and the leader a
	// zombie, so this sweep does not list every process either.
	pid = zombieChild(t)
	tr = &Tree{id: "sweep-test-" + uniqueSuffix(), pid: pid, leaderStart: startOf(t, pid), portable: proc.Portable(), cg: &cgroup{dir: dir, fd: -1},
		members:  map[int]*member{pid: {pid: pid, pgid: pid, fd: -1, leader: true}},
		unmarked: map[int]uint64{}}
	if tr.sweep() {
		t.Fatal("a sweep finished the tree before the leader's exit was marked")
	}
	if lists != 0 {
		t.Errorf("a sweep before the leader's exit was marked listed every process %d times, with the group empty and the leader a zombie", lists)
	}
	tr.leaderExited = true
	if !tr.sweep() {
		t.Fatal("the sweep did not finish the tree once the exit was marked")
	}

	// Without the group's proof, every process is read.
	pid = zombieChild(t)
	tr = &Tree{id: "sweep-test-" + uniqueSuffix(), pid: pid, leaderStart: startOf(t, pid), portable: proc.Portable(),
		members:  map[int]*member{pid: {pid: pid, pgid: pid, fd: -1, leader: true}},
		unmarked: map[int]uint64{}, leaderExited: true}
	if !tr.sweep() {
		t.Fatal("the sweep did not finish a tree whose leader exited")
	}
	if lists == 0 {
		t.Error("without a group the sweep did not list every process")
	}
}

func contains(pids []int, pid int) bool {
	for _, p := range pids {
		if p == pid {
			return true
		}
	}
	return false
}

func startOf(t *testing.T, pid int) uint64 {
	t.Helper()
	s, err := proc.Stat(pid)
	if err != nil {
		t.Fatal(err)
	}
	return s.Start
}
