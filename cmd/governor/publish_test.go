package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestPublishCommand(t *testing.T) {
	g := []string{"--backend", "file", "--dir", filepath.Join(t.TempDir(), "state"), "--config", emptyConfig(t)}
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.WriteFile(src, []byte("v1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "dst")
	if code, out, errs := cli(t, append(g, "--json", "publish", src, dst)...); code != 0 || !strings.Contains(out, `"method": "link"`) {
		t.Fatalf("publish: exit %d, stdout %s, stderr %s", code, out, errs)
	}
	if b, _ := os.ReadFile(dst); string(b) != "v1\n" {
		t.Fatalf("dst %q", b)
	}

	// DST exists: 73, untouched.
	if err := os.WriteFile(src, []byte("v2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := cli(t, append(g, "publish", src, dst)...); code != 73 || !strings.Contains(errs, dst) || !strings.Contains(errs, "exists") {
		t.Fatalf("existing dst: exit %d, stderr %s; want 73 naming it", code, errs)
	}
	if b, _ := os.ReadFile(dst); string(b) != "v1\n" {
		t.Fatalf("dst overwritten: %q", b)
	}

	// Standard input.
	var out, errb bytes.Buffer
	fromStdin := filepath.Join(dir, "from-stdin")
	if code := Main(append(g, "publish", "-", fromStdin), strings.NewReader("piped\n"), &out, &errb); code != 0 {
		t.Fatalf("publish -: exit %d, %s", code, &errb)
	}
	if b, _ := os.ReadFile(fromStdin); string(b) != "piped\n" {
		t.Fatalf("from stdin %q", b)
	}

	// A pipe, as <(cmd) gives.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() { w.WriteString("from a pipe\n"); w.Close() }()
	fromPipe := filepath.Join(dir, "from-pipe")
	code, _, errs := cli(t, append(g, "publish", "/dev/fd/"+strconv.Itoa(int(r.Fd())), fromPipe)...)
	r.Close()
	if b, _ := os.ReadFile(fromPipe); code != 0 || string(b) != "from a pipe\n" {
		t.Fatalf("publish from a pipe: exit %d, %s, content %q", code, errs, b)
	}
	if code, _, errs := cli(t, append(g, "publish", dir, filepath.Join(dir, "z"))...); code != 125 || !strings.Contains(errs, "is a directory") {
		t.Fatalf("directory src: exit %d, %s", code, errs)
	}

	// --lease: published while held, 122 and nothing published after.
	code, lease, errs := cli(t, append(g, "acquire", "release-lock", "--limit", "1", "--ttl", "1m")...)
	if code != 0 {
		t.Fatalf("acquire: exit %d, %s", code, errs)
	}
	lease = strings.Fields(lease)[0]
	if code, _, errs := cli(t, append(g, "publish", "--lease", lease, src, filepath.Join(dir, "held"))...); code != 0 {
		t.Fatalf("publish --lease (held): exit %d, %s", code, errs)
	}
	if code, _, errs := cli(t, append(g, "release", lease)...); code != 0 {
		t.Fatalf("release: exit %d, %s", code, errs)
	}
	lost := filepath.Join(dir, "lost")
	if code, _, errs := cli(t, append(g, "publish", "--lease", lease, src, lost)...); code != 122 || !strings.Contains(errs, "not held") {
		t.Fatalf("publish --lease (released): exit %d, stderr %s; want 122", code, errs)
	}
	if _, err := os.Lstat(lost); !os.IsNotExist(err) {
		t.Fatalf("published without the lease: %v", err)
	}

	// Bad input: 125 naming it.
	if code, _, errs := cli(t, append(g, "publish", filepath.Join(dir, "missing"), filepath.Join(dir, "x"))...); code != 125 || !strings.Contains(errs, "missing") {
		t.Fatalf("missing src: exit %d, %s", code, errs)
	}
	if code, _, errs := cli(t, append(g, "publish", "--lease", "nolease", src, filepath.Join(dir, "y"))...); code != 125 || !strings.Contains(errs, "RESOURCE@LEASE_ID") {
		t.Fatalf("bad --lease: exit %d, %s", code, errs)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".governor-publish.") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
}

func TestPublishHelp(t *testing.T) {
	code, out, _ := cli(t, "publish", "--help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"Exit codes:", "73 ", "122 ", "125 ", "link(2)", "cannot promise", "--lease", "window"} {
		if !strings.Contains(out, want) {
			t.Errorf("publish --help lacks %q", want)
		}
	}
}
