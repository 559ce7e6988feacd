package proc_test

import (
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor/proc"
)

// TestExited: the channel stays open while the process runs, closes once
// it has exited (not yet reaped: a zombie), is closed at once for a pid
// whose start time is not the one asked for, and stays open after stop.
func TestExited(t *testing.T) {
	if proc.Portable() {
		t.Skip("the portable path polls instead")
	}
	start := func() (*exec.Cmd, uint64) {
		cmd := exec.Command("sleep", "60")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		st, err := proc.StartTime(cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		return cmd, st
	}
	cmd, st := start()
	gone, stop, err := proc.Exited(cmd.Process.Pid, st)
	if err != nil {
		t.Fatalf("Exited of a live child: %v", err)
	}
	defer stop()
	select {
	case <-gone:
		t.Fatal("closed while the process runs")
	case <-time.After(100 * time.Millisecond):
	}
	if err := syscall.Kill(cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select { // not reaped yet: the test's Cleanup waits for it
	case <-gone:
	case <-time.After(30 * time.Second):
		t.Fatal("not closed 30 s after the process was killed")
	}

	other, st2 := start()
	wrong, stop2, err := proc.Exited(other.Process.Pid, st2+1)
	if err != nil {
		t.Fatal(err)
	}
	defer stop2()
	select {
	case <-wrong:
	default:
		t.Fatal("a pid whose start time is not the one asked for is not taken for ended")
	}

	live, st3 := start()
	watched, stop3, err := proc.Exited(live.Process.Pid, st3)
	if err != nil {
		t.Fatal(err)
	}
	stop3()
	_ = live.Process.Kill()
	_ = live.Wait()
	select {
	case <-watched:
		t.Fatal("closed after stop")
	case <-time.After(200 * time.Millisecond):
	}
}
