package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	module "github.com/governor-dev/governor"
)

// The built binary names the version of VERSION, and the revision it was
// built from as `go version -m` reads it (none with -buildvcs=false).
func TestVersionFlag(t *testing.T) {
	bin := governorBin(t)
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("governor --version: %v\n%s", err, out)
	}
	if !strings.HasPrefix(string(out), "governor "+module.Version+", ") || !strings.Contains(string(out), ", go1.") {
		t.Errorf("governor --version = %q; want the version %s and the Go release", out, module.Version)
	}
	info, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(info), "\n") {
		if rev, ok := strings.CutPrefix(strings.TrimSpace(line), "build\tvcs.revision="); ok && !strings.Contains(string(out), "commit "+rev) {
			t.Errorf("governor --version = %q; want commit %s", out, rev)
		}
	}
}

// A build without VCS stamping (-buildvcs=false, as from a source archive)
// still names the version, and the commit the release script stamps with
// the linker.
func TestVersionFlagBuildVCSFalse(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary twice")
	}
	dir := t.TempDir()
	for _, tc := range []struct{ ldflags, want string }{
		{"", "governor " + module.Version + ", commit unknown, go1."},
		{"-X github.com/governor-dev/governor/internal/buildinfo.commit=0123abcd", "governor " + module.Version + ", commit 0123abcd, go1."},
	} {
		bin := filepath.Join(dir, "governor")
		build := exec.Command("go", "build", "-buildvcs=false", "-ldflags", tc.ldflags, "-o", bin, ".")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build -buildvcs=false: %v\n%s", err, out)
		}
		out, err := exec.Command(bin, "--version").CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), tc.want) {
			t.Errorf("-ldflags %q: governor --version = %q, %v; want prefix %q", tc.ldflags, out, err, tc.want)
		}
	}
}
