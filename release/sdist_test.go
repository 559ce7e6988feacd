package release

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The sdist installs in a fresh venv with no package index: its build
// backend (clients/python/governor_build.py) is standard library, so pip
// has no build requirement to fetch. Without Go on PATH the wheel pip
// builds is pure (the client finds governor by GOVERNOR_BIN or PATH); with
// Go, docs/install.md's commands (TestInstallDocs) build the binary in.
func TestSdistInstallsOffline(t *testing.T) {
	if testing.Short() {
		t.Skip("makes a venv")
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	tmp := t.TempDir()
	notices := filepath.Join(tmp, "THIRD_PARTY_NOTICES")
	if err := os.WriteFile(notices, []byte("the notices\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(dir string, env []string, name string, args ...string) string {
		t.Helper()
		c := exec.Command(name, args...)
		c.Dir, c.Env = dir, env
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", c, err, out)
		}
		return string(out)
	}
	run(root, append(os.Environ(), "OUT="+filepath.Join(tmp, "dist"), "GOVERNOR_NOTICES="+notices, "GOVERNOR_COMMIT=c1"),
		"clients/python/build-wheels.sh", "sdist")
	v := strings.TrimSpace(read(t, "VERSION"))
	sdist := filepath.Join(tmp, "dist", "governor_client-"+v+".tar.gz")

	// A user's shell: no Go, no GOVERNOR_* or PIP_* settings, a HOME of its own.
	env := []string{"PATH=" + filepath.Dir(py) + ":/usr/bin:/bin", "HOME=" + tmp, "LANG=C.UTF-8"}
	run(tmp, env, py, "-m", "venv", "v")
	run(tmp, env, "v/bin/pip", "install", "--no-index", "--no-cache-dir", sdist)
	out := run(tmp, env, "v/bin/python", "-c", "import governor, os; print(governor.__version__, "+
		"os.path.exists(os.path.join(os.path.dirname(governor.__file__), '_bin')))")
	if out != v+" False\n" {
		t.Errorf("the installed client says %q: want its version %s, and no binary (no Go on PATH)", out, v)
	}
}
