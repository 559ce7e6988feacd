package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/governor-dev/governor/internal/proctest"
)

// BenchmarkWrappedTrue compares, in one run on one machine, a command
// wrapped by governor on the file backend with the same command under
// flock(1):
//
//	go test -run '^$' -bench WrappedTrue -benchtime 200x ./cmd/governor/
//
// governor-run is the binary `go build` makes by default (with cgo where
// a C compiler is found: dynamically linked, its threads made by libc);
// governor-run-nocgo the same source built with CGO_ENABLED=0.
//
// Target (issue 19): governor costs no more than 5x flock.
func BenchmarkWrappedTrue(b *testing.B) {
	bin := governorBin(b)
	dir := b.TempDir()
	nocgo, err := proctest.BuildGovernorAs(dir, "governor-nocgo", "CGO_ENABLED=0")
	if err != nil {
		b.Fatal(err)
	}
	cfg := filepath.Join(dir, "exec-defaults.yaml")
	if err := os.WriteFile(cfg, []byte("project: bench\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	b.Run("flock", func(b *testing.B) {
		if _, err := exec.LookPath("flock"); err != nil {
			b.Skip("flock(1) not installed")
		}
		lock := filepath.Join(dir, "lockfile")
		for i := 0; i < b.N; i++ {
			if err := exec.Command("flock", lock, "true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	wrapped := func(bin string) func(b *testing.B) {
		return func(b *testing.B) {
			args := []string{"--config", cfg, "--dir", filepath.Join(dir, "state"), "run", "--resource", "heavy", "--limit", "1", "--", "true"}
			for i := 0; i < b.N; i++ {
				c := exec.Command(bin, args...)
				c.Env = cleanEnv()
				if out, err := c.CombinedOutput(); err != nil {
					b.Fatalf("%v: %s", err, out)
				}
			}
		}
	}
	b.Run("governor-run", wrapped(bin))
	b.Run("governor-run-nocgo", wrapped(nocgo))
}
