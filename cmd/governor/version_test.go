package main

import (
	"os/exec"
	"runtime/debug"
	"strings"
	"testing"
)

func TestDescribeBuild(t *testing.T) {
	for _, tc := range []struct {
		bi   debug.BuildInfo
		want string
	}{
		{debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.0"}}, "v1.2.0, go1.26.8"},
		{debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "a497879abc"}, {Key: "vcs.time", Value: "2026-11-30T21:00:00Z"}, {Key: "vcs.modified", Value: "true"}}},
			"(devel), revision a497879abc of 2026-11-30T21:00:00Z with local changes, go1.26.8"},
		{debug.BuildInfo{GoVersion: "go1.26.8", Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "ff00"}, {Key: "vcs.modified", Value: "false"}}},
			"(devel), revision ff00, go1.26.8"},
	} {
		if got := describeBuild(&tc.bi); got != tc.want {
			t.Errorf("describeBuild = %q, want %q", got, tc.want)
		}
	}
}

// The built binary names its module version, and the revision it was
// built from when `go build` stamped one (not with -buildvcs=false), as
// `go version -m` reads them.
func TestVersionFlag(t *testing.T) {
	bin := governorBin(t)
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("governor --version: %v\n%s", err, out)
	}
	if !strings.HasPrefix(string(out), "governor (devel), ") || !strings.Contains(string(out), ", go1.") {
		t.Errorf("governor --version = %q; want the module version and the Go release", out)
	}
	info, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(info), "\n") {
		if rev, ok := strings.CutPrefix(strings.TrimSpace(line), "build\tvcs.revision="); ok && !strings.Contains(string(out), "revision "+rev) {
			t.Errorf("governor --version = %q; want revision %s", out, rev)
		}
	}
}
