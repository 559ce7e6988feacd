package release

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	urlSHARE = regexp.MustCompile(`(?m)^\s*url "https://github\.com/governor-dev/governor/releases/download/v([^/"]+)/([^"]+)"\n\s*sha256 "([^"]*)"`)
	testDoRE = regexp.MustCompile(`(?s)\n  test do\n(.*?)\n  end\n`)
)

// rubySyntax checks a formula with `ruby -c` when ruby is installed
// (.ci/run installs it); Homebrew itself does not run on Linux.
func rubySyntax(t *testing.T, name, formula string) {
	t.Helper()
	ruby, err := exec.LookPath("ruby")
	if err != nil {
		t.Logf("ruby not installed: %s's syntax not checked", name)
		return
	}
	path := filepath.Join(t.TempDir(), "governor.rb")
	if err := os.WriteFile(path, []byte(formula), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(ruby, "-c", path).CombinedOutput(); err != nil {
		t.Errorf("ruby -c %s: %v\n%s", name, err, out)
	}
}

// The formula in the repository: the licence, the four archives by
// placeholder, and a test block that asks --version and runs a command in
// the heavy slot.
func TestFormulaTemplate(t *testing.T) {
	f := read(t, "release/homebrew/governor.rb")
	rubySyntax(t, "release/homebrew/governor.rb", f)
	if !strings.Contains(f, `license "`+spdx+`"`) || !strings.Contains(f, `version "@VERSION@"`) {
		t.Errorf("governor.rb: want license %q and version \"@VERSION@\"", spdx)
	}
	archives := urlSHARE.FindAllStringSubmatch(f, -1)
	if len(archives) != len(targets) {
		t.Fatalf("governor.rb: %d url/sha256 pairs, want one per target (%d)", len(archives), len(targets))
	}
	for i, tg := range targets {
		found := false
		for _, a := range archives {
			key := strings.ToUpper("@SHA256_" + tg.goos + "_" + tg.goarch + "@")
			found = found || a[2] == "governor-@VERSION@-"+tg.goos+"-"+tg.goarch+".tar.gz" && a[3] == key
		}
		if !found {
			t.Errorf("governor.rb: no url of the %s/%s archive with its sha256 placeholder (target %d)", tg.goos, tg.goarch, i)
		}
	}
	test := testDoRE.FindStringSubmatch(f)
	if test == nil || !strings.Contains(test[1], `#{bin}/governor --version`) || !strings.Contains(test[1], `#{bin}/governor run --resource heavy`) {
		t.Errorf("governor.rb: its test do block must run `governor --version` and a run in the heavy slot")
	}
}

// checkFormula: the release's formula names version v and, for every
// archive, its file in dir and that file's sha256.
func checkFormula(t *testing.T, f, v, dir string) {
	t.Helper()
	rubySyntax(t, "the release's governor.rb", f)
	if strings.Contains(f, "@") && regexp.MustCompile(`@[A-Z0-9_]+@`).MatchString(f) {
		t.Errorf("the release's governor.rb keeps a placeholder")
	}
	if !strings.Contains(f, `version "`+v+`"`) {
		t.Errorf("the release's governor.rb: want version %q", v)
	}
	archives := urlSHARE.FindAllStringSubmatch(f, -1)
	if len(archives) != len(targets) {
		t.Fatalf("the release's governor.rb: %d url/sha256 pairs, want %d", len(archives), len(targets))
	}
	for _, a := range archives {
		b, err := os.ReadFile(filepath.Join(dir, a[2]))
		if err != nil {
			t.Errorf("the release's governor.rb names %s: %v", a[2], err)
			continue
		}
		h := sha256.Sum256(b)
		if a[1] != v || a[3] != hex.EncodeToString(h[:]) {
			t.Errorf("the release's governor.rb: %s under v%s with sha256 %s; the file's is %x", a[2], a[1], a[3], h)
		}
	}
}
