package release

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	module "github.com/governor-dev/governor"
)

// root is the repository's root, from this package's directory.
const root = ".."

// spdx is the one licence, as every package names it.
const spdx = "Apache-2.0"

var semverRE = regexp.MustCompile(`^\d+\.\d+\.\d+(-[0-9A-Za-z.]+)?$`)

func read(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The version is VERSION's everywhere a source names one; no client
// carries a literal version of its own.
func TestOneVersion(t *testing.T) {
	v := strings.TrimSpace(read(t, "VERSION"))
	if !semverRE.MatchString(v) {
		t.Fatalf("VERSION %q: want MAJOR.MINOR.PATCH[-PRERELEASE], no leading v", v)
	}
	if module.Version != v {
		t.Errorf("the module's embedded Version %q, VERSION %q", module.Version, v)
	}

	if py := read(t, "clients/python/pyproject.toml"); regexp.MustCompile(`(?m)^(\[project\]|version\s*=)`).MatchString(py) {
		t.Errorf("clients/python/pyproject.toml: want no [project] table and no version: the build backend, governor_build.py, reads VERSION")
	}
	if !strings.Contains(read(t, "clients/python/governor_build.py"), `v = _read("VERSION")`) {
		t.Errorf("clients/python/governor_build.py: want the version read from VERSION (v = _read(\"VERSION\"))")
	}
	for _, f := range []string{"clients/python/governor/__init__.py", "clients/python/governor/_bridge.py", "clients/python/governor_build.py", "clients/typescript/src/bridge.ts"} {
		if m := regexp.MustCompile(`(?m)^.*["'/]\d+\.\d+\.\d+["'].*$`).FindString(read(t, f)); m != "" {
			t.Errorf("%s names a literal version (%q): take it from VERSION (governor/_version.py, src/version.ts)", f, m)
		}
	}

	var pkg struct{ Version, License string }
	if err := json.Unmarshal([]byte(read(t, "clients/typescript/package.json")), &pkg); err != nil {
		t.Fatal(err)
	}
	if pkg.Version != v {
		t.Errorf("clients/typescript/package.json version %q, VERSION %q", pkg.Version, v)
	}
	var lock struct {
		Version  string
		Packages map[string]struct{ Version, License string }
	}
	if err := json.Unmarshal([]byte(read(t, "clients/typescript/package-lock.json")), &lock); err != nil {
		t.Fatal(err)
	}
	if lock.Version != v || lock.Packages[""].Version != v {
		t.Errorf("clients/typescript/package-lock.json version %q (root package %q), VERSION %q", lock.Version, lock.Packages[""].Version, v)
	}
}

// The licence is Apache-2.0, by its SPDX id, wherever a package declares one.
func TestOneLicence(t *testing.T) {
	if l := read(t, "LICENSE"); !strings.Contains(l, "Apache License") || !strings.Contains(l, "Version 2.0, January 2004") {
		t.Errorf("LICENSE is not the Apache License 2.0")
	}
	if module.License != spdx { // governor --version prints it
		t.Errorf("the module's License %q, want %q", module.License, spdx)
	}
	if py := read(t, "clients/python/governor_build.py"); !strings.Contains(py, `SPDX = "`+spdx+`"`) {
		t.Errorf("clients/python/governor_build.py: want SPDX = %q (the wheels' and sdist's License)", spdx)
	}
	var pkg struct{ License string }
	if err := json.Unmarshal([]byte(read(t, "clients/typescript/package.json")), &pkg); err != nil {
		t.Fatal(err)
	}
	if pkg.License != spdx {
		t.Errorf("clients/typescript/package.json license %q, want %q", pkg.License, spdx)
	}
	var lock struct {
		Packages map[string]struct{ License string }
	}
	if err := json.Unmarshal([]byte(read(t, "clients/typescript/package-lock.json")), &lock); err != nil {
		t.Fatal(err)
	}
	if l := lock.Packages[""].License; l != spdx {
		t.Errorf("clients/typescript/package-lock.json root package license %q, want %q", l, spdx)
	}
	// The platform packages' package.json is written by build-packages.sh.
	for _, l := range regexp.MustCompile(`"license": "([^"]*)"`).FindAllStringSubmatch(read(t, "clients/typescript/build-packages.sh"), -1) {
		if l[1] != spdx {
			t.Errorf("clients/typescript/build-packages.sh writes license %q, want %q", l[1], spdx)
		}
	}
}

// CHANGELOG.md has an entry for VERSION (the release command refuses to
// build without one and ships it as RELEASE_NOTES.md).
func TestChangelogEntry(t *testing.T) {
	v := strings.TrimSpace(read(t, "VERSION"))
	if !strings.Contains(read(t, "CHANGELOG.md"), "\n## ["+v+"]\n") {
		t.Errorf("CHANGELOG.md has no entry \"## [%s]\"", v)
	}
}
