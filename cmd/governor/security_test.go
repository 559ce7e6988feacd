package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor/safetext/safetexttest"
	"github.com/governor-dev/governor/internal/exitcode"
	"github.com/governor-dev/governor/internal/proctest"
	"github.com/governor-dev/governor/internal/redistest"
	"github.com/governor-dev/governor/internal/usertest"
)

// --redis-url-file keeps a Redis password off the command line (ps shows
// every user's); the file is read only if it is the user's and private.
func TestRedisURLFile(t *testing.T) {
	s := redistest.Start(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "redis-url")
	url := "redis://default:hunter2@" + strings.TrimPrefix(s.URL(), "redis://")
	if err := os.WriteFile(path, []byte(url+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := emptyConfig(t)

	code, out, errs := cli(t, "--config", cfg, "--redis-url-file", path, "config", "show")
	if code != 0 || !strings.Contains(out, "redis://default:***@") || strings.Contains(out+errs, "hunter2") {
		t.Fatalf("config show: exit %d\n%s%s", code, out, errs)
	}
	code, _, errs = cli(t, "--config", cfg, "--redis-url-file", path, "slots")
	if code != 0 {
		t.Fatalf("slots through --redis-url-file: exit %d, %s", code, errs)
	}

	for _, tc := range []struct {
		mode os.FileMode
		want string
	}{
		{0o644, "chmod o-rwx " + path},
		{0o604, "chmod o-rwx " + path},
		{0o620, "chmod go-w " + path},
	} {
		if err := os.Chmod(path, tc.mode); err != nil {
			t.Fatal(err)
		}
		code, _, errs := cli(t, "--config", cfg, "--redis-url-file", path, "slots")
		if code != exitcode.Failure || !strings.Contains(errs, tc.want) || strings.Contains(errs, "hunter2") {
			t.Errorf("mode %04o: exit %d, stderr %q; want %d naming %q", tc.mode, code, errs, exitcode.Failure, tc.want)
		}
	}
	if err := os.Chmod(path, 0o640); err != nil { // a group may share it
		t.Fatal(err)
	}
	if code, _, errs := cli(t, "--config", cfg, "--redis-url-file", path, "slots"); code != 0 {
		t.Errorf("mode 0640: exit %d, %s", code, errs)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--redis-url-file", filepath.Join(dir, "missing"), "slots"}, filepath.Join(dir, "missing")},
		{[]string{"--redis-url-file", path, "--redis-url", s.URL(), "slots"}, "one of --redis-url and --redis-url-file"},
		{[]string{"--redis-url-file", writeFile(t, "", 0o600), "slots"}, "is empty"},
		{[]string{"--redis-url-file", writeFile(t, "redis://h\nredis://i\n", 0o600), "slots"}, "several lines"},
	} {
		code, _, errs := cli(t, append([]string{"--config", cfg}, tc.args...)...)
		if code != exitcode.Failure || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d naming %q", tc.args, code, errs, exitcode.Failure, tc.want)
		}
	}
	_, help, _ := cli(t, "--help")
	help = strings.Join(strings.Fields(help), " ")
	for _, want := range []string{"--redis-url-file", "visible to every user", "GOVERNOR_REDIS_URL"} {
		if !strings.Contains(help, want) {
			t.Errorf("--help lacks %q", want)
		}
	}
}

// Another user's URL file is not read: it could point governor at their
// Redis.
func TestRedisURLFileOfAnotherUser(t *testing.T) {
	other := usertest.New(t)
	path := writeFile(t, "redis://127.0.0.1:1/0\n", 0o600)
	if err := os.Chown(path, other.UID, other.GID); err != nil {
		t.Fatal(err)
	}
	code, _, errs := cli(t, "--config", emptyConfig(t), "--redis-url-file", path, "slots")
	if code != exitcode.Failure || !strings.Contains(errs, other.Name) || !strings.Contains(errs, "not by you") {
		t.Fatalf("exit %d, stderr %q; want %d naming the owner %s", code, errs, exitcode.Failure, other.Name)
	}
}

func writeFile(t *testing.T, content string, mode os.FileMode) string {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "file")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(content); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(f.Name(), mode); err != nil {
		t.Fatal(err)
	}
	return f.Name()
}

// A hostile session and command, declared by one governor process, reach
// other users through slots, busy and takeover refusals and events: each
// escapes them.
func TestHostileSessionPrintedByOtherProcesses(t *testing.T) {
	tg := fileTarget(t, "lease:\n  ttl: 2s\n  heartbeat: 500ms\n")
	holder := tg.command("run", "--session", safetexttest.Hostile, "--resource", "heavy", "--", "sh", "-c", "sleep 120 # "+safetexttest.Hostile)
	var holderErr proctest.SyncBuffer
	holder.Stderr = &holderErr
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	holderDone := make(chan error, 1)
	go func() { holderDone <- holder.Wait() }()
	t.Cleanup(func() { _ = holder.Process.Kill(); <-holderDone })
	g := tg.governor(t)
	lease := tg.soleHolder(t, g, "heavy", 30*time.Second, "the hostile holder holds heavy").LeaseID

	code, out, errs := tg.run(t, "slots")
	if code != 0 {
		t.Fatalf("slots: exit %d, %s", code, errs)
	}
	safetexttest.Check(t, "slots", out)
	if !strings.Contains(out, `evil\x1b]0;pwned\x07`) {
		t.Errorf("slots does not show the session escaped:\n%s", out)
	}
	code, out, _ = tg.run(t, "--json", "slots")
	if code != 0 {
		t.Fatalf("slots --json: exit %d", code)
	}
	safetexttest.Check(t, "slots --json", out)

	code, _, errs = tg.run(t, "run", "--if-busy", "fail", "--resource", "heavy", "--", "true")
	if code != exitcode.Busy {
		t.Fatalf("run --if-busy fail: exit %d, %s", code, errs)
	}
	safetexttest.Check(t, "busy message", errs)
	code, _, errs = tg.run(t, "acquire", "heavy", "--limit", "1")
	if code != exitcode.Busy {
		t.Fatalf("acquire: exit %d, %s", code, errs)
	}
	safetexttest.Check(t, "acquire busy message", errs)
	code, _, errs = tg.run(t, "takeover", "heavy", "--lease", lease)
	if code != exitcode.Busy {
		t.Fatalf("takeover of a live holder: exit %d, %s", code, errs)
	}
	safetexttest.Check(t, "takeover refusal", errs)

	// A hostile taker: its session goes into the takeover event.
	taker := tg.command("takeover", "heavy", "--lease", lease, "--force")
	taker.Env = append(taker.Env, "GOVERNOR_SESSION="+safetexttest.Hostile)
	if b, err := taker.CombinedOutput(); err != nil {
		t.Fatalf("takeover --force: %v: %s", err, b)
	}
	code, out, errs = tg.run(t, "events", "heavy")
	if code != 0 {
		t.Fatalf("events: exit %d, %s", code, errs)
	}
	// The holder learns at its next renewal who took its lease.
	select {
	case <-holderDone:
		holderDone <- nil // for the cleanup
	case <-time.After(60 * time.Second):
		t.Fatalf("the holder still runs 60s after its lease was taken over; stderr %q", holderErr.String())
	}
	safetexttest.Check(t, "the holder's lost-lease message", holderErr.String())
	if !strings.Contains(holderErr.String(), `taken over by session evil\x1b]0;pwned\x07`) {
		t.Errorf("the holder does not say who took its lease: %q", holderErr.String())
	}
	safetexttest.Check(t, "events", out)
	if !strings.Contains(out, `evil\x1b]0;pwned\x07`) {
		t.Errorf("events does not show the taker's session escaped:\n%s", out)
	}
	code, out, _ = tg.run(t, "--json", "events", "heavy")
	if code != 0 {
		t.Fatalf("events --json: exit %d", code)
	}
	safetexttest.Check(t, "events --json", out)
}

// The attack of issue 18: another user drops exec-defaults.yaml into a
// shared working directory. governor, started there, refuses it instead
// of switching to the other user's Redis, project and limits.
func TestAnotherUsersConfigInSharedDir(t *testing.T) {
	other := usertest.New(t)
	shared := usertest.SharedDir(t)
	path := filepath.Join(shared, "exec-defaults.yaml")
	w := other.Command("sh", "-c", `printf 'project: hijacked\nbackend: redis\nredis:\n  url: redis://127.0.0.1:1/0\n' > "$0"`, path)
	if out, err := w.CombinedOutput(); err != nil {
		t.Fatalf("writing as %s: %v: %s", other.Name, err, out)
	}
	c := exec.Command(governorBin(t), "config", "show")
	c.Dir = shared
	c.Env = append(cleanEnv(), "HOME="+t.TempDir(), "XDG_CONFIG_HOME=")
	out, err := c.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitcode.Failure {
		t.Fatalf("config show in %s: %v, output %s; want exit %d", shared, err, out, exitcode.Failure)
	}
	for _, want := range []string{path, other.Name, "not by you"} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("output lacks %q: %s", want, out)
		}
	}
	if bytes.Contains(out, []byte("hijacked")) {
		t.Errorf("the other user's settings were read: %s", out)
	}
}
