package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/governor-dev/governor/internal/exitcode"
	"github.com/governor-dev/governor/internal/usertest"
)

// Two Unix users in one group share a setgid state dir: their
// `run --resource heavy --limit 1` never overlap (issue 18 point 3).
func TestSharedStateDirAcrossUsers(t *testing.T) {
	t.Parallel()
	alice, bob := usertest.New(t), usertest.New(t)
	shared := usertest.SharedDir(t)
	bin := sharedGovernorBin(t, shared)
	// install -d -m 2770 -g GROUP DIR, GROUP being alice's.
	dir := filepath.Join(shared, "state")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, 0, alice.GID); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o770|os.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	member := func(u *usertest.User, args ...string) *exec.Cmd {
		c := u.Command(bin, append([]string{"--dir", dir, "--project", "p", "run", "--resource", "heavy", "--limit", "1"}, args...)...)
		c.SysProcAttr.Credential.Groups = []uint32{uint32(alice.GID)}
		c.Dir = shared
		c.Env = append(cleanEnv(), "HOME="+shared, "XDG_CONFIG_HOME=", "XDG_STATE_HOME=")
		return c
	}

	started := filepath.Join(shared, "started")
	holder := member(alice, "--", "sh", "-c", `touch "$0"; exec sleep 60`, started)
	logPath := filepath.Join(t.TempDir(), "holder.log")
	log, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	holder.Stdout, holder.Stderr = log, log
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = holder.Process.Kill()
		_ = holder.Wait()
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(started); err == nil {
			break
		}
		if time.Now().After(deadline) {
			out, _ := os.ReadFile(logPath)
			t.Fatalf("%s's run did not start its command: %s", alice.Name, out)
		}
		time.Sleep(20 * time.Millisecond)
	}

	got, err := member(bob, "--", "true").CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitcode.Busy {
		t.Fatalf("%s's run while %s holds heavy: %v, output %s; want busy (%d)", bob.Name, alice.Name, err, got, exitcode.Busy)
	}

	_ = holder.Process.Signal(os.Interrupt)
	_ = holder.Wait()
	if got, err := member(bob, "--", "true").CombinedOutput(); err != nil {
		t.Fatalf("%s's run once %s's ended: %v, output %s", bob.Name, alice.Name, err, got)
	}
}

// run --help says whom the file backend coordinates.
func TestRunHelpSaysWhomFileBackendCoordinates(t *testing.T) {
	_, help, _ := cli(t, "run", "--help")
	help = strings.Join(strings.Fields(help), " ")
	for _, want := range []string{"coordinates your own processes only", "install -d -m 2770 -g governor /var/lib/governor", "Across machines you need Redis"} {
		if !strings.Contains(help, want) {
			t.Errorf("run --help lacks %q", want)
		}
	}
}
