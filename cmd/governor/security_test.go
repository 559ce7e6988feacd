package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

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
		if code != ExitFailure || !strings.Contains(errs, tc.want) || strings.Contains(errs, "hunter2") {
			t.Errorf("mode %04o: exit %d, stderr %q; want %d naming %q", tc.mode, code, errs, ExitFailure, tc.want)
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
		if code != ExitFailure || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d naming %q", tc.args, code, errs, ExitFailure, tc.want)
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
	if code != ExitFailure || !strings.Contains(errs, other.Name) || !strings.Contains(errs, "not by you") {
		t.Fatalf("exit %d, stderr %q; want %d naming the owner %s", code, errs, ExitFailure, other.Name)
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
