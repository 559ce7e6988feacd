package main

import (
	"debug/buildinfo"
	"os/exec"
	"strings"
	"testing"

	"github.com/governor-dev/governor/internal/proctest"
)

// TestBuildWithoutServe: built with -tags governor_noserve, governor
// links no Prometheus module (the point of that build: their package
// initialisation, paid by every process of the full binary, is gone),
// its serve says it is missing (125, naming the tag), and its other
// commands are there.
func TestBuildWithoutServe(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds governor")
	}
	bin, err := proctest.BuildGovernorAs(t.TempDir(), "governor-noserve", "GOFLAGS=-tags=governor_noserve")
	if err != nil {
		t.Fatal(err)
	}
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range info.Deps {
		if strings.HasPrefix(m.Path, "github.com/prometheus/") {
			t.Errorf("linked %s %s", m.Path, m.Version)
		}
	}
	c := exec.Command(bin, "serve", "--listen", "127.0.0.1:0")
	c.Env = cleanEnv()
	if code, _, stderr := execCode(t, c); code != 125 || !strings.Contains(stderr, "built without serve (-tags governor_noserve") {
		t.Errorf("serve: exit %d (want 125): %s", code, stderr)
	}
	c = exec.Command(bin, "bridge", "--help")
	c.Env = cleanEnv()
	if code, stdout, stderr := execCode(t, c); code != 0 || !strings.Contains(stdout, "protocol 1") {
		t.Errorf("bridge --help: exit %d: %s%s", code, stdout, stderr)
	}
}
