package main

import (
	"os/exec"
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

// TestRunFollowsJobControl: in an interactive shell, Ctrl-Z stops the
// command and governor with it, so the shell gets its terminal back and
// reports the job stopped; fg gives the terminal back to the command,
// which goes on reading it.
func TestRunFollowsJobControl(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not installed")
	}
	tg := fileTarget(t, "")
	master, slave := openPTY(t)
	sh := exec.Command(bash, "--norc", "--noprofile", "-i")
	sh.Env = append(cleanEnv(), "PS1=$ ", "TERM=dumb")
	sh.Stdin, sh.Stdout, sh.Stderr = slave, slave, slave
	sh.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	t.Cleanup(func() {
		_ = sh.Process.Kill()
		_ = sh.Wait()
	})
	seen := readTerminal(master)
	typed := func(s string) {
		t.Helper()
		if _, err := master.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	argv := append([]string{tg.bin}, tg.global()...)
	argv = append(argv, "run", "--resource", "heavy", "--", "sh", "-c", "'echo rea''dy; read line; echo got:$line'")
	typed(strings.Join(argv, " ") + "\n")
	eventually(t, 20*time.Second, "the command starts", func() bool { return strings.Contains(seen(), "ready") })

	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("terminal: %q", seen())
		}
	})
	typed("\x1a") // Ctrl-Z
	eventually(t, 20*time.Second, "the shell reports the job stopped and prompts again", func() bool {
		out := seen()
		i := strings.LastIndex(out, "Stopped")
		return i >= 0 && strings.Contains(out[i:], "$ ")
	})
	// The shell has the terminal: it runs commands.
	typed("echo shell-has-it\n")
	eventually(t, 20*time.Second, "the shell runs a command while the job is stopped", func() bool {
		return strings.Count(seen(), "shell-has-it") >= 2 // the echo of the typing, then the output
	})

	typed("fg\n")
	time.Sleep(300 * time.Millisecond) // let fg hand the terminal on
	typed("hello\n")
	eventually(t, 20*time.Second, "the resumed command reads the terminal", func() bool {
		return strings.Contains(seen(), "got:hello")
	})
	typed("echo exit=$?\n")
	eventually(t, 20*time.Second, "governor exits 0 and the shell prompts", func() bool {
		return strings.Contains(seen(), "exit=0")
	})
}
