package docs

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// releaseURL is where docs/install.md downloads a release's files from.
const releaseURL = "https://github.com/governor-dev/governor/releases/download/"

// Every example of install.md marked "run by TestInstallDocs" runs as
// written against a release's output (GOVERNOR_RELEASE_DIR:
// release/release.sh --dry-run runs this test on what it built), each in a
// fresh HOME, in a directory of its own holding the release's files, with
// the system's PATH (Go, Python and npm on it) and Go's caches. Downloads from the release
// page are served from the release's files by a curl stand-in; nothing
// else is faked.
func TestInstallDocs(t *testing.T) {
	rel := os.Getenv("GOVERNOR_RELEASE_DIR")
	if rel == "" {
		t.Skip("GOVERNOR_RELEASE_DIR unset: release/release.sh --dry-run runs this test on its output")
	}
	version, err := os.ReadFile("../VERSION")
	if err != nil {
		t.Fatal(err)
	}
	v := strings.TrimSpace(string(version))
	files, err := os.ReadDir(rel)
	if err != nil {
		t.Fatal(err)
	}
	stand := t.TempDir()
	curl := `#!/bin/sh
# curl as docs/install.md runs it (-fLO URL), the URL served from the release's files.
[ "$1" = -fLO ] && [ $# = 2 ] || { echo "curl stand-in: want -fLO URL, have: $*" >&2; exit 2; }
case $2 in
  ` + releaseURL + `v` + v + `/*) f=${2##*/}; rm -f "./$f"; exec cp "` + rel + `/$f" "./$f" ;;
  *) echo "curl stand-in: $2 is no file of release v` + v + `" >&2; exit 22 ;;
esac
`
	if err := os.WriteFile(filepath.Join(stand, "curl"), []byte(curl), 0o755); err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, ex := range examples(t, "install.md") {
		if !strings.Contains(ex.mark, "run by TestInstallDocs") {
			continue
		}
		ran++
		t.Run(itoa(ex.line), func(t *testing.T) {
			dir, home := t.TempDir(), t.TempDir()
			for _, f := range files {
				if err := os.Symlink(filepath.Join(rel, f.Name()), filepath.Join(dir, f.Name())); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "bash", "-c", "set -euo pipefail\n"+ex.body)
			cmd.Dir = dir
			cmd.Env = append(slicesDelete(os.Environ(), "HOME=", "PATH=", "XDG_", "GOVERNOR_", "PIP_", "VIRTUAL_ENV=", "npm_config_"),
				"HOME="+home, "PATH="+stand+string(os.PathListSeparator)+os.Getenv("PATH"),
				// Go's caches stay the machine's (a fresh one would build the sdist's binary from cold).
				"GOCACHE="+goEnv(t, "GOCACHE"), "GOMODCACHE="+goEnv(t, "GOMODCACHE"))
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("install.md:%d: the example fails: %v\n%s\n--- the example:\n%s", ex.line, err, out, ex.body)
			}
		})
	}
	if ran == 0 {
		t.Fatal("install.md has no example marked \"run by TestInstallDocs\"")
	}
}

// goEnv runs `go env NAME`.
func goEnv(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", name, err)
	}
	return strings.TrimSpace(string(out))
}
