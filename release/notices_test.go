package release

import (
	"bytes"
	"debug/buildinfo"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// noticeRE is the head of one file in THIRD_PARTY_NOTICES (release/notices.sh):
// the module, its version and the file's name, between two rules.
var noticeRE = regexp.MustCompile(`(?m)^-{79}\n(.+) (\S+): (\S+)\n-{79}\n`)

// licensed lists the "module version" pairs of notices that have a licence
// file (LICENSE, LICENCE or COPYING, with any suffix), and the Go standard
// library's as "go GOVERSION".
func licensed(notices string) map[string]bool {
	out := map[string]bool{}
	for _, m := range noticeRE.FindAllStringSubmatch(notices, -1) {
		name := strings.ToUpper(m[3])
		if strings.HasPrefix(name, "LICENSE") || strings.HasPrefix(name, "LICENCE") || strings.HasPrefix(name, "COPYING") {
			mod := strings.Replace(m[1], "the Go standard library", "go", 1)
			out[mod+" "+m[2]] = true
		}
	}
	return out
}

// checkNotices: notices, the THIRD_PARTY_NOTICES beside bin, holds a
// licence of every module bin links (its build information), at the
// version it links, and of its Go standard library.
func checkNotices(t *testing.T, what, notices string, bin []byte) {
	t.Helper()
	bi, err := buildinfo.Read(bytes.NewReader(bin))
	if err != nil {
		t.Errorf("%s: the binary has no build information: %v", what, err)
		return
	}
	have := licensed(notices)
	if !have["go "+bi.GoVersion] {
		t.Errorf("%s: THIRD_PARTY_NOTICES has no licence of the Go standard library %s", what, bi.GoVersion)
	}
	for _, m := range bi.Deps {
		if m.Replace != nil {
			m = m.Replace
		}
		if !have[m.Path+" "+m.Version] {
			t.Errorf("%s: the binary links %s %s, whose licence is not in THIRD_PARTY_NOTICES beside it", what, m.Path, m.Version)
		}
	}
}

// release/notices.sh covers every module governor links, on every OS/arch
// of the release: a module added without a licence file fails it, and so
// here.
func TestNoticesCoverLinkedModules(t *testing.T) {
	cmd := exec.Command("release/notices.sh")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("release/notices.sh: %v\n%s", err, stderr.Bytes())
	}
	have := licensed(string(out))
	for _, tg := range targets {
		list := exec.Command("go", "list", "-deps", "-f", "{{with .Module}}{{if not .Main}}{{.Path}} {{.Version}}{{end}}{{end}}", "./cmd/governor")
		list.Dir, list.Env = root, append(os.Environ(), "GOOS="+tg.goos, "GOARCH="+tg.goarch, "CGO_ENABLED=0")
		mods, err := list.Output()
		if err != nil {
			t.Fatalf("go list -deps ./cmd/governor: %v", err)
		}
		for _, m := range strings.Split(strings.TrimSpace(string(mods)), "\n") {
			if m != "" && !have[m] {
				t.Errorf("%s/%s: governor links %s, whose licence is not in release/notices.sh's output", tg.goos, tg.goarch, m)
			}
		}
	}
	if !have["go "+goEnv(t, "GOVERSION")] {
		t.Errorf("release/notices.sh: no licence of the Go standard library")
	}
	if n := len(have); n < 10 {
		t.Errorf("release/notices.sh: %d licences found: the notices' headings are not what licensed reads", n)
	}
}
