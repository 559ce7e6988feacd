package main

import (
	"github.com/governor-dev/governor/internal/exitcode"
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
	return docBlock(t, "README.md", heading)
}

// docBlock returns the first fenced code block after heading in page, a
// path from the repository's root (README.md, docs/cli.md).
func docBlock(t *testing.T, page, heading string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", page))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut("\n"+string(b), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("%s has no heading %q", page, heading)
	}
	_, after, ok = strings.Cut(after, "```")
	if !ok {
		t.Fatalf("%s: no code block after %q", page, heading)
	}
	_, after, _ = strings.Cut(after, "\n") // the info string
	block, _, ok := strings.Cut(after, "```")
	if !ok {
		t.Fatalf("%s: unterminated code block after %q", page, heading)
	}
	return block
}

// The README's shell idiom for leases, run as a script against the built
// binary: with the resource free it runs to the end and releases; with
// the resource busy it stops at once with exit 73 and never runs the
// protected part, with and without set -e.
func TestREADMEShellLease(t *testing.T) {
	t.Parallel()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	block := readmeBlock(t, "### A lease in a shell script")
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
		code, _, errs := execCode(t, c)
		return code, errs
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
		if code != exitcode.Busy || logged() != "acquire" {
			t.Errorf("busy, %q: exit %d, calls %q, stderr %s; want 73 and nothing after the acquire", prelude, code, logged(), errs)
		}
	}
	if code, _, errs := gov("release", strings.Fields(out)[0]); code != 0 {
		t.Fatalf("the busy scripts touched the other holder's lease: release exit %d %s", code, errs)
	}
}

// readmeEnv is an environment for a README example run as a newcomer
// would: no configuration but what the test writes, state under a fresh
// home.
func readmeEnv(t *testing.T) (dir string, env []string) {
	t.Helper()
	dir = t.TempDir()
	env = append(cleanEnv(), "HOME="+dir, "XDG_CONFIG_HOME="+filepath.Join(dir, "xdg"),
		"XDG_STATE_HOME="+filepath.Join(dir, "state"))
	return dir, env
}

// The README's first command, with the built binary for `go run
// ./cmd/governor`, on a fresh home: it runs on the embedded default and
// prints the command's output.
func TestREADMEFirstCommand(t *testing.T) {
	block := strings.TrimSpace(readmeBlock(t, "on Linux and macOS, see [Platforms](docs/platforms.md)):**"))
	cmdline, ok := strings.CutPrefix(block, "go run ./cmd/governor ")
	if !ok || strings.Contains(cmdline, "\n") {
		t.Fatalf("README's first command is not one `go run ./cmd/governor` line: %q", block)
	}
	dir, env := readmeEnv(t)
	c := exec.Command("sh", "-c", governorBin(t)+" "+cmdline)
	c.Dir, c.Env = dir, env
	out, err := c.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "I hold the heavy slot") {
		t.Fatalf("README's first command: %v\n%s", err, out)
	}
}

// The README's exec-defaults.yaml example passes `config check`.
func TestREADMEConfigExample(t *testing.T) {
	block := docBlock(t, "docs/configuration.md", "# Configuration (`exec-defaults.yaml`)")
	dir, env := readmeEnv(t)
	p := filepath.Join(dir, "exec-defaults.yaml")
	if err := os.WriteFile(p, []byte(block), 0o600); err != nil {
		t.Fatal(err)
	}
	c := exec.Command(governorBin(t), "config", "check", "--config", p)
	c.Dir, c.Env = dir, env
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("config check of the README's example: %v\n%s", err, out)
	}
}

// Every command the README's CLI list names exists: its --help exits 0.
func TestREADMECommandList(t *testing.T) {
	t.Parallel()
	block := readmeBlock(t, "## CLI")
	dir, env := readmeEnv(t)
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
		if strings.HasPrefix(line, " ") {
			continue // a command's line, under a long usage
		}
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "governor" {
			t.Fatalf("README's CLI list: line %q does not start with a governor command", line)
		}
		words := []string{f[1]}
		if len(f) > 2 && f[2] != "" && f[2][0] >= 'a' && f[2][0] <= 'z' && !strings.ContainsAny(f[2], "[@-") {
			words = append(words, f[2]) // a subcommand: seq next, config show|check
		}
		for _, sub := range strings.Split(words[len(words)-1], "|") {
			args := append(append([]string(nil), words[:len(words)-1]...), sub, "--help")
			c := exec.Command(governorBin(t), args...)
			c.Dir, c.Env = dir, env
			out, err := c.CombinedOutput()
			// cobra shows a parent's help for an unknown subcommand: the
			// usage must name the command itself.
			usage := "\n  governor " + strings.Join(args[:len(args)-1], " ")
			if err != nil || !strings.Contains(string(out), usage+" ") && !strings.Contains(string(out), usage+"\n") {
				t.Errorf("governor %s: %v; no usage line %q in\n%s", strings.Join(args, " "), err, usage, out)
			}
			n++
		}
	}
	if n < 10 {
		t.Fatalf("README's CLI list names %d commands; want the whole list", n)
	}
}
