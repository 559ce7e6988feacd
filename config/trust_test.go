package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/governor-dev/governor/config"
	"github.com/governor-dev/governor/internal/usertest"
)

// Another user's exec-defaults.yaml in a shared working directory is not
// read: it would switch the victim's backend, project and limits.
func TestLoadRefusesAnotherUsersFile(t *testing.T) {
	other := usertest.New(t)
	shared := usertest.SharedDir(t)
	path := filepath.Join(shared, config.DefaultFileName)
	// The other user writes the file, as they would.
	w := other.Command("sh", "-c", `printf 'project: hijacked\nredis:\n  url: redis://attacker:6379/0\n' > "$0"`, path)
	if out, err := w.CombinedOutput(); err != nil {
		t.Fatalf("writing as %s: %v: %s", other.Name, err, out)
	}
	env := []string{"HOME=" + t.TempDir()}
	getwd := func() (string, error) { return shared, nil }
	for _, explicit := range []string{"", path} {
		l, err := config.Load(config.LoadOptions{File: explicit, Env: env, Getwd: getwd})
		if err == nil {
			t.Fatalf("--config %q: loaded project %q from another user's file", explicit, l.Config.Project)
		}
		if !errors.Is(err, config.ErrUntrusted) {
			t.Errorf("--config %q: error %v is not ErrUntrusted", explicit, err)
		}
		for _, want := range []string{path, other.Name, "chown", "cp "} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("--config %q: error %q lacks %q", explicit, err, want)
			}
		}
	}
}

// Another user's symbolic link is not followed, even to a file of the
// user's own or root's: the link chose it. One's own link is followed.
func TestLoadRefusesAnotherUsersSymlink(t *testing.T) {
	other := usertest.New(t)
	shared := usertest.SharedDir(t)
	target := filepath.Join(t.TempDir(), "root-owned.yaml")
	if err := os.WriteFile(target, []byte("project: chosen\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(shared, config.DefaultFileName)
	if out, err := other.Command("ln", "-s", target, path).CombinedOutput(); err != nil {
		t.Fatalf("ln -s as %s: %v: %s", other.Name, err, out)
	}
	env := []string{"HOME=" + t.TempDir()}
	getwd := func() (string, error) { return shared, nil }
	_, err := config.Load(config.LoadOptions{Env: env, Getwd: getwd})
	if !errors.Is(err, config.ErrUntrusted) || !strings.Contains(err.Error(), "symbolic link owned by "+other.Name) {
		t.Fatalf("got %v; want ErrUntrusted naming the link's owner %s", err, other.Name)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	l, err := config.Load(config.LoadOptions{Env: env, Getwd: getwd})
	if err != nil || l.Config.Project != "chosen" {
		t.Fatalf("own link: %v, %+v", err, l)
	}
}

// A file of one's own is refused while group or others can write it, and
// read once they cannot. The owner check needs no second user; it runs as
// whoever runs the tests.
func TestLoadRefusesWritableFile(t *testing.T) {
	e := newEnv(t)
	path := e.write(config.DefaultFileName, "project: mine\n")
	for _, mode := range []os.FileMode{0o664, 0o646, 0o666, 0o620} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		_, err := e.load(config.LoadOptions{})
		if !errors.Is(err, config.ErrUntrusted) || !strings.Contains(err.Error(), "chmod go-w "+path) {
			t.Errorf("mode %04o: got %v; want ErrUntrusted naming chmod go-w %s", mode, err, path)
		}
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := e.load(config.LoadOptions{})
	if err != nil || l.Config.Project != "mine" {
		t.Fatalf("mode 0644: %v, %+v", err, l)
	}
	// The file under $XDG_CONFIG_HOME is held to the same rule.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	xdg := e.write(filepath.Join(e.home, ".config", "governor", config.DefaultFileName), "project: mine\n")
	if err := os.Chmod(xdg, 0o666); err != nil {
		t.Fatal(err)
	}
	if _, err := e.load(config.LoadOptions{}); !errors.Is(err, config.ErrUntrusted) {
		t.Errorf("world-writable %s: got %v; want ErrUntrusted", xdg, err)
	}
}

// A FIFO in the config file's place does not hang Load.
func TestLoadRefusesFIFO(t *testing.T) {
	e := newEnv(t)
	path := filepath.Join(e.cwd, "fifo.yaml")
	if err := mkfifo(path); err != nil {
		t.Skip("mkfifo: ", err)
	}
	_, err := e.load(config.LoadOptions{File: path})
	if err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("got %v; want a refusal naming a non-regular file", err)
	}
}
