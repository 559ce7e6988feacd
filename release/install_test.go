package release

import (
	"archive/zip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// goEnv runs `go env NAME`.
func goEnv(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", name, err)
	}
	return strings.TrimSpace(string(out))
}

// `go install ./cmd/governor` from the tree (docs/install.md) gives a
// governor that names VERSION.
func TestInstallFromTree(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	gobin := t.TempDir()
	cmd := exec.Command("go", "install", "./cmd/governor")
	cmd.Dir, cmd.Env = root, append(os.Environ(), "GOBIN="+gobin)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go install ./cmd/governor: %v\n%s", err, out)
	}
	v := strings.TrimSpace(read(t, "VERSION"))
	out, err := exec.Command(filepath.Join(gobin, "governor"), "--version").Output()
	if err != nil || !strings.HasPrefix(string(out), "governor "+v+", ") {
		t.Errorf("governor --version = %q, %v; want the version %s", out, err, v)
	}
}

// `go install github.com/governor-dev/governor/cmd/governor@vVERSION`
// works as it will once the tag is pushed: the module, zipped from the
// tree as the proxy would serve the tag, is offered by a proxy in a
// directory (its dependencies from the local module cache), and the
// installed governor names the version and the module's tag. A fresh
// module cache keeps this stand-in out of the real one. It builds with
// -trimpath and without cgo, as the release's binaries are built: the
// dependencies' packages are then the release's, already compiled (a
// fresh module cache changes the paths an untrimmed build hashes), and
// what is checked, the module resolving and its version stamped, is the
// same. It still unpacks every module, so the release command runs it
// (GOVERNOR_RELEASE_DIR), not every `go test`.
func TestGoInstallModule(t *testing.T) {
	releaseDir(t)
	v := strings.TrimSpace(read(t, "VERSION"))
	tag := "v" + v
	tmp := t.TempDir()
	at := filepath.Join(tmp, "proxy", "github.com", "governor-dev", "governor", "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(at, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("list", tag+"\n")
	write(tag+".info", `{"Version":"`+tag+`","Time":"`+time.Now().UTC().Format(time.RFC3339)+`"}`)
	write(tag+".mod", read(t, "go.mod"))

	// The tree as git has it (tracked, and new files not ignored), without
	// the nested modules (bench/peers), which a module zip leaves out.
	ls := exec.Command("git", "ls-files", "--cached", "--others", "--exclude-standard")
	ls.Dir = root
	list, err := ls.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	var nested []string
	files := strings.Fields(string(list))
	for _, f := range files {
		if filepath.Base(f) == "go.mod" && f != "go.mod" {
			nested = append(nested, filepath.Dir(f)+"/")
		}
	}
	zf, err := os.Create(filepath.Join(at, tag+".zip"))
	if err != nil {
		t.Fatal(err)
	}
	z := zip.NewWriter(zf)
	for _, f := range files {
		skip := false
		for _, n := range nested {
			skip = skip || strings.HasPrefix(f, n)
		}
		if skip {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, f))
		if os.IsNotExist(err) { // deleted in the work tree
			continue
		} else if err != nil {
			t.Fatal(err)
		}
		w, err := z.Create("github.com/governor-dev/governor@" + tag + "/" + f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	zf.Close()

	modcache := filepath.Join(tmp, "modcache")
	gobin := filepath.Join(tmp, "bin")
	env := append(os.Environ(),
		"GOPROXY=file://"+filepath.Join(tmp, "proxy")+",file://"+filepath.Join(goEnv(t, "GOMODCACHE"), "cache", "download"),
		"GOMODCACHE="+modcache, "GOBIN="+gobin, "GOSUMDB=off", "GOFLAGS=-modcacherw -trimpath", "CGO_ENABLED=0", "GOTOOLCHAIN=local", "GOWORK=off")
	defer func() { // the module cache's files are read-only by default; -modcacherw lets RemoveAll work
		clean := exec.Command("go", "clean", "-modcache")
		clean.Env = env
		_ = clean.Run()
	}()
	install := exec.Command("go", "install", "github.com/governor-dev/governor/cmd/governor@"+tag)
	install.Dir, install.Env = tmp, env
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("go install github.com/governor-dev/governor/cmd/governor@%s: %v\n%s", tag, err, out)
	}
	out, err := exec.Command(filepath.Join(gobin, "governor"), "--version").Output()
	if want := "governor " + v + ", module " + tag + ", go1."; err != nil || !strings.HasPrefix(string(out), want) {
		t.Errorf("governor --version = %q, %v; want the prefix %q", out, err, want)
	}
}
