package release

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Two builds of one commit are byte-identical wherever the tree is
// (release/build-binary.sh: -trimpath, -buildvcs=false, the commit
// stamped), and the binary holds no path of the machine that built it:
// neither tree, GOROOT, the module cache nor HOME. One OS/arch (the host's),
// built from the tree and from a copy of it elsewhere.
func TestReproducibleBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds governor twice")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	ls := exec.Command("git", "ls-files", "--cached", "--others", "--exclude-standard")
	ls.Dir = root
	list, err := ls.Output()
	if err != nil {
		t.Skipf("git ls-files: %v (not a git checkout)", err)
	}
	tmp := t.TempDir()
	elsewhere := filepath.Join(tmp, "another", "checkout", "of-governor")
	for _, f := range strings.Split(strings.TrimSpace(string(list)), "\n") {
		st, err := os.Stat(filepath.Join(root, f))
		if err != nil || !st.Mode().IsRegular() { // deleted in the work tree, or a link
			continue
		}
		if err := os.MkdirAll(filepath.Join(elsewhere, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(elsewhere, f), mustRead(t, filepath.Join(root, f)), st.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	build := func(tree, out string) []byte {
		c := exec.Command(filepath.Join(tree, "release", "build-binary.sh"), runtime.GOOS+"/"+runtime.GOARCH, out)
		c.Dir, c.Env = tree, append(os.Environ(), "GOVERNOR_COMMIT=0123456789abcdef0123456789abcdef01234567")
		if b, err := c.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", c, err, b)
		}
		return mustRead(t, out)
	}
	a := build(abs, filepath.Join(tmp, "a"))
	b := build(elsewhere, filepath.Join(tmp, "b"))
	if !bytes.Equal(a, b) {
		t.Errorf("two builds of one commit differ (%d and %d bytes): one from %s, one from %s", len(a), len(b), abs, elsewhere)
	}
	home, _ := os.UserHomeDir()
	for _, p := range []string{abs, elsewhere, goEnv(t, "GOROOT"), goEnv(t, "GOMODCACHE"), home} {
		if p == "" || p == "/" {
			continue
		}
		for name, bin := range map[string][]byte{"from the tree": a, "from the copy": b} {
			if n := bytes.Count(bin, []byte(p+"/")); n > 0 {
				t.Errorf("the binary built %s holds the build path %s %d times: want -trimpath", name, p, n)
			}
		}
	}
}

// commitTime is SOURCE_DATE_EPOCH as release.sh sets it: the commit's time.
func commitTime(t *testing.T) time.Time {
	t.Helper()
	c := exec.Command("git", "log", "-1", "--format=%ct")
	c.Dir = root
	out, err := c.Output()
	if err != nil {
		t.Fatalf("git log: %v", err)
	}
	sec, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return time.Unix(sec, 0)
}

// checkReproducible: an artifact records nothing of when, where or by whom
// it was built, so that a second build of the commit writes the same
// bytes: gzip without a name or time; tar entries of owner 0 and mode 644
// or 755, all of one time (ours the commit's; npm pack's its own fixed
// one), ours sorted by name; wheel entries of one time, mode 644 or 755.
func checkReproducible(t *testing.T, path string) {
	t.Helper()
	name := filepath.Base(path)
	mode := func(what string, m int64) {
		if m&0o777 != 0o644 && m&0o777 != 0o755 {
			t.Errorf("%s: %s has mode %o: want 644 or 755", name, what, m&0o777)
		}
	}
	switch {
	case strings.HasSuffix(name, ".whl"):
		z, err := zip.OpenReader(path)
		if err != nil {
			t.Fatal(err)
		}
		defer z.Close()
		for _, f := range z.File {
			if !f.Modified.Equal(z.File[0].Modified) {
				t.Errorf("%s: %s has the time %v, %s %v: want one time", name, f.Name, f.Modified, z.File[0].Name, z.File[0].Modified)
			}
			mode(f.Name, int64(f.Mode().Perm()))
		}
	case strings.HasSuffix(name, ".tar.gz") || strings.HasSuffix(name, ".tgz"):
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		gz, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		if !gz.ModTime.IsZero() || gz.Name != "" {
			t.Errorf("%s: gzip header names %q at %v: want neither (gzip -n)", name, gz.Name, gz.ModTime)
		}
		tr := tar.NewReader(gz)
		var names []string
		var first time.Time
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if first.IsZero() {
				first = h.ModTime
			}
			if !h.ModTime.Equal(first) || h.Uid != 0 || h.Gid != 0 {
				t.Errorf("%s: %s at %v, owner %d:%d: want one time and owner 0:0", name, h.Name, h.ModTime, h.Uid, h.Gid)
			}
			mode(h.Name, h.Mode)
			names = append(names, h.Name)
		}
		if strings.HasSuffix(name, ".tar.gz") {
			if want := commitTime(t); !first.Equal(want) {
				t.Errorf("%s: entries at %v: want the commit's time %v (SOURCE_DATE_EPOCH)", name, first, want)
			}
			if !sort.StringsAreSorted(names) {
				t.Errorf("%s: entries not sorted by name: %q", name, names)
			}
		}
	}
}
