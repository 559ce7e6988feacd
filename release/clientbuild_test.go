package release

import (
	"bytes"
	"debug/buildinfo"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// noserveTag is the build tag of the clients' binary (the wheels' and the
// npm platform packages'): governor without serve, which links no
// Prometheus module (cmd/governor/serve_none.go).
const noserveTag = "governor_noserve"

// hasTag reports whether a binary's -tags setting names tag.
func hasTag(bi *buildinfo.BuildInfo, tag string) bool {
	for _, s := range bi.Settings {
		if s.Key == "-tags" {
			for _, t := range strings.Split(s.Value, ",") {
				if t == tag {
					return true
				}
			}
		}
	}
	return false
}

// prometheusDeps lists the github.com/prometheus/ modules a binary links:
// serve's (its metrics), which only the full build has.
func prometheusDeps(bi *buildinfo.BuildInfo) []string {
	var out []string
	for _, m := range bi.Deps {
		if strings.HasPrefix(m.Path, "github.com/prometheus/") {
			out = append(out, m.Path)
		}
	}
	return out
}

// clientBuildProblems says how client, the binary a wheel or an npm
// platform package carries, falls short of the clients' build beside
// archive, the full binary of the same OS/arch: client must be built
// without serve (-tags governor_noserve, no Prometheus module) and
// archive with it, and otherwise alike — the same Go, main module, build
// settings (the linker's stamp of the commit among them) and versions of
// the modules both link. When they run here (run), both print the same
// --version line, and `serve --help` answers in archive and exits 125 in
// client, saying serve is not in its build. nil: no problem.
func clientBuildProblems(archive, client []byte, run bool) []string {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	ai, err := buildinfo.Read(bytes.NewReader(archive))
	if err != nil {
		return []string{fmt.Sprintf("the archive's binary has no build information: %v", err)}
	}
	ci, err := buildinfo.Read(bytes.NewReader(client))
	if err != nil {
		return []string{fmt.Sprintf("the client's binary has no build information: %v", err)}
	}
	if hasTag(ai, noserveTag) || len(prometheusDeps(ai)) == 0 {
		add("the archive's binary is built without serve (tag %s: %t, Prometheus modules: %v): want the full build", noserveTag, hasTag(ai, noserveTag), prometheusDeps(ai))
	}
	if !hasTag(ci, noserveTag) {
		add("the client's binary is not built with -tags %s", noserveTag)
	}
	if deps := prometheusDeps(ci); len(deps) > 0 {
		add("the client's binary links %v: want none (the build without serve)", deps)
	}
	if ci.GoVersion != ai.GoVersion || ci.Path != ai.Path || ci.Main != ai.Main {
		add("the client's binary is %s %s %v, the archive's %s %s %v", ci.GoVersion, ci.Path, ci.Main, ai.GoVersion, ai.Path, ai.Main)
	}
	settings := func(bi *buildinfo.BuildInfo) map[string]string {
		m := map[string]string{}
		for _, s := range bi.Settings {
			if s.Key != "-tags" {
				m[s.Key] = s.Value
			}
		}
		return m
	}
	as, cs := settings(ai), settings(ci)
	for k, v := range as {
		if cs[k] != v {
			add("build setting %s: the client's binary %q, the archive's %q", k, cs[k], v)
		}
	}
	for k, v := range cs {
		if _, ok := as[k]; !ok {
			add("build setting %s: the client's binary %q, the archive's none", k, v)
		}
	}
	linked := map[string]string{}
	for _, m := range ai.Deps {
		linked[m.Path] = m.Version
	}
	for _, m := range ci.Deps {
		if v, ok := linked[m.Path]; !ok || v != m.Version {
			add("the client's binary links %s %s, the archive's %q", m.Path, m.Version, v)
		}
	}
	if !run {
		return problems
	}

	dir, err := os.MkdirTemp("", "governor-clientbuild-")
	if err != nil {
		return append(problems, err.Error())
	}
	defer os.RemoveAll(dir)
	exe := func(name string, b []byte, args ...string) (code int, stdout, stderr string) {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o755); err != nil {
			return -1, "", err.Error()
		}
		var o, e bytes.Buffer
		c := exec.Command(path, args...)
		c.Stdout, c.Stderr, c.Env = &o, &e, []string{"PATH=/usr/bin:/bin", "HOME=" + dir}
		err := c.Run()
		var exit *exec.ExitError
		switch {
		case errors.As(err, &exit):
			code = exit.ExitCode()
		case err != nil:
			return -1, "", err.Error()
		}
		return code, o.String(), e.String()
	}
	_, av, _ := exe("archive", archive, "--version")
	_, cv, _ := exe("client", client, "--version")
	if av == "" || cv != av {
		add("--version: the client's binary %q, the archive's %q", cv, av)
	}
	if code, out, errOut := exe("archive", archive, "serve", "--help"); code != 0 || !strings.Contains(out, "--listen") {
		add("the archive's serve --help: exit %d, %q%q; want its help", code, out, errOut)
	}
	if code, _, errOut := exe("client", client, "serve", "--help"); code != 125 || !strings.Contains(errOut, "built without serve") {
		add("the client's serve --help: exit %d, %q; want 125, serve not in this build", code, errOut)
	}
	return problems
}

// checkClientBinaries: a target's wheel and npm platform package carry
// the same bytes, the clients' build of the archive's binary.
func checkClientBinaries(t *testing.T, tg target, archive, wheel, npm []byte) {
	t.Helper()
	if !bytes.Equal(wheel, npm) {
		t.Errorf("%s/%s: the wheel's binary and the npm platform package's differ", tg.goos, tg.goarch)
	}
	run := tg.goos == runtime.GOOS && tg.goarch == runtime.GOARCH
	for _, p := range clientBuildProblems(archive, wheel, run) {
		t.Errorf("%s/%s: %s", tg.goos, tg.goarch, p)
	}
}

// The check holds the two builds of release/build-binary.sh apart: the
// full binary and the one --without-serve pass; either build in both
// places does not, nor does a binary stamped with another commit.
func TestClientBuildCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("builds governor three times")
	}
	dir := t.TempDir()
	build := func(name, commit string, args ...string) []byte {
		out := filepath.Join(dir, name)
		c := exec.Command("release/build-binary.sh", append(args, runtime.GOOS+"/"+runtime.GOARCH, out)...)
		c.Dir, c.Env = root, append(os.Environ(), "GOVERNOR_COMMIT="+commit)
		if b, err := c.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", c, err, b)
		}
		return mustRead(t, out)
	}
	full := build("full", "c1")
	client := build("client", "c1", "--without-serve")
	other := build("other", "c2", "--without-serve")
	if p := clientBuildProblems(full, client, true); p != nil {
		t.Errorf("the full build and the one without serve: %q", p)
	}
	for name, pair := range map[string][2][]byte{
		"full in both":          {full, full},
		"without serve in both": {client, client},
		"another commit":        {full, other},
	} {
		if p := clientBuildProblems(pair[0], pair[1], true); p == nil {
			t.Errorf("%s: no problem found", name)
		}
	}
}
