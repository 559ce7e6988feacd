package main

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRunGivesTheTerminal: run from an interactive terminal (governor in
// its foreground), the command can read from it — it is given the
// terminal's foreground instead of being stopped by SIGTTIN — and
// governor gets the terminal back afterwards.
func TestRunGivesTheTerminal(t *testing.T) {
	tg := fileTarget(t, "")
	master, slave := openPTY(t)
	c := tg.command("run", "--resource", "heavy", "--", "sh", "-c", "read line; echo got:$line")
	c.Stdin, c.Stdout, c.Stderr = slave, slave, slave
	// governor leads a new session whose controlling terminal is the pty:
	// it is the terminal's foreground, as in an interactive shell.
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	seen := readTerminal(master)
	// Type a line once the command can have started.
	time.Sleep(300 * time.Millisecond)
	if _, err := master.Write([]byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v; terminal %q", err, seen())
		}
	case <-time.After(30 * time.Second):
		_ = c.Process.Kill()
		t.Fatalf("the command could not read the terminal (stopped by SIGTTIN?); terminal %q", seen())
	}
	eventually(t, 10*time.Second, "the command's output on the terminal", func() bool {
		return strings.Contains(seen(), "got:hello")
	})
}
