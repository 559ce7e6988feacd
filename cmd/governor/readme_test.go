package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readmeBlock returns the first fenced code block after heading in the
// README.
func readmeBlock(t *testing.T, heading string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("README has no heading %q", heading)
	}
	_, after, ok = strings.Cut(after, "```")
	if !ok {
		t.Fatalf("README: no code block after %q", heading)
	}
	_, after, _ = strings.Cut(after, "\n") // the info string
	block, _, ok := strings.Cut(after, "```")
	if !ok {
		t.Fatalf("README: unterminated code block after %q", heading)
	}
	return block
}

// The README's shell idiom for leases, run as a script against the built
// binary: with the resource free it runs to the end and releases; with
// the resource busy it stops at once with exit 73 and never runs the
// protected part, with and without set -e.
func TestREADMEShellLease(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	block := readmeBlock(t, "### Leases in shell scripts")
	// governor on PATH is a shim that logs each call, then runs the
	// binary; the config is found in the working directory, as a user's.
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	calls := filepath.Join(dir, "calls")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	argv := filepath.Join(dir, "argv") // every argument, as ps shows them to all users
	shim := "#!/bin/sh\necho \"$1\" >> " + calls + "\necho \"$*\" >> " + argv + "\nexec " + governorBin(t) + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "governor"), []byte(shim), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "exec-defaults.yaml"), []byte("project: readme\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(cleanEnv(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"GOVERNOR_DIR="+filepath.Join(dir, "state"), "XDG_CONFIG_HOME="+filepath.Join(dir, "xdg"))
	script := func(prelude string) (int, string) {
		t.Helper()
		os.Remove(calls)
		c := exec.Command(bash, "-c", prelude+block)
		c.Dir, c.Env = dir, env
		var errb bytes.Buffer
		c.Stderr = &errb
		err := c.Run()
		var ee *exec.ExitError
		switch {
		case err == nil:
			return 0, errb.String()
		case errors.As(err, &ee):
			return ee.ExitCode(), errb.String()
		}
		t.Fatal(err)
		return 0, ""
	}
	logged := func() string {
		b, _ := os.ReadFile(calls)
		return strings.Join(strings.Fields(string(b)), " ")
	}
	gov := func(args ...string) (int, string, string) {
		return cli(t, append([]string{"--backend", "file", "--dir", filepath.Join(dir, "state"), "--config", filepath.Join(dir, "exec-defaults.yaml")}, args...)...)
	}

	for _, prelude := range []string{"", "set -e\n"} {
		if code, errs := script(prelude); code != 0 || logged() != "acquire seq renew release" {
			t.Fatalf("free, %q: exit %d, calls %q, stderr %s; want 0 and every step", prelude, code, logged(), errs)
		}
		if code, out, _ := gov("slots", "heavy"); code != 0 || !strings.Contains(out, "in use 0") {
			t.Fatalf("the script did not release heavy:\n%s", out)
		}
		// The handle's secret never was an argument (visible in ps).
		if b, _ := os.ReadFile(argv); regexp.MustCompile(`\.[0-9a-f]{32}`).Match(b) {
			t.Fatalf("a lease secret was passed as an argument:\n%s", b)
		}
	}
	code, out, errs := gov("acquire", "heavy", "--limit", "1", "--session", "someone-else")
	if code != 0 {
		t.Fatalf("acquire: exit %d %s", code, errs)
	}
	for _, prelude := range []string{"", "set -e\n"} {
		code, errs := script(prelude)
		if code != ExitBusy || logged() != "acquire" {
			t.Errorf("busy, %q: exit %d, calls %q, stderr %s; want 73 and nothing after the acquire", prelude, code, logged(), errs)
		}
	}
	if code, _, errs := gov("release", strings.Fields(out)[0]); code != 0 {
		t.Fatalf("the busy scripts touched the other holder's lease: release exit %d %s", code, errs)
	}
}
