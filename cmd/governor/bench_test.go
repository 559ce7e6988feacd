package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/governor-dev/governor/internal/proctest"
)

// BenchmarkWrappedTrue compares, in one run on one machine, `true`
// wrapped by governor on the file backend with `true` under flock(1):
//
//	go test -run '^$' -bench WrappedTrue -benchtime 200x ./cmd/governor/
//
// governor is the binary `go build` makes by default (with cgo where a C
// compiler is found: dynamically linked, its threads made by libc);
// governor-nocgo the same source built with CGO_ENABLED=0, and
// governor-noserve with CGO_ENABLED=0 and -tags governor_noserve (no
// serve, hence no client_golang, procfs, protobuf to initialise). Each
// iteration runs the three commands once, in turns rotated from one
// iteration to the next, so that a machine whose speed drifts slows
// them alike; it reports each one's median (ms) and the medians of the
// ratios taken within an iteration (x-flock).
//
// Target (issue 19): governor costs no more than 5x flock.
func BenchmarkWrappedTrue(b *testing.B) {
	if _, err := exec.LookPath("flock"); err != nil {
		b.Skip("flock(1) not installed")
	}
	bin := governorBin(b)
	dir := b.TempDir()
	nocgo, noserve := staticBuilds(b, dir)
	cfg := filepath.Join(dir, "exec-defaults.yaml")
	if err := os.WriteFile(cfg, []byte("project: bench\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	lock := filepath.Join(dir, "lockfile")
	args := []string{"--config", cfg, "--dir", filepath.Join(dir, "state"), "run", "--resource", "heavy", "--limit", "1", "--", "true"}
	commands := []func() *exec.Cmd{
		func() *exec.Cmd { return exec.Command("flock", lock, "true") },
		func() *exec.Cmd { c := exec.Command(bin, args...); c.Env = cleanEnv(); return c },
		func() *exec.Cmd { c := exec.Command(nocgo, args...); c.Env = cleanEnv(); return c },
		func() *exec.Cmd { c := exec.Command(noserve, args...); c.Env = cleanEnv(); return c },
	}
	times := make([][]float64, len(commands)) // ms, per iteration
	for i := 0; i < b.N; i++ {
		for k := range commands {
			j := (i + k) % len(commands)
			c := commands[j]()
			start := time.Now()
			if out, err := c.CombinedOutput(); err != nil {
				b.Fatalf("%s: %v: %s", c, err, out)
			}
			times[j] = append(times[j], float64(time.Since(start))/float64(time.Millisecond))
		}
	}
	b.StopTimer()
	ratios := func(j int) []float64 {
		r := make([]float64, b.N)
		for i := range r {
			r[i] = times[j][i] / times[0][i]
		}
		return r
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(median(times[0]), "flock-ms")
	b.ReportMetric(median(times[1]), "governor-ms")
	b.ReportMetric(median(times[2]), "governor-nocgo-ms")
	b.ReportMetric(median(ratios(1)), "governor-x-flock")
	b.ReportMetric(median(ratios(2)), "governor-nocgo-x-flock")
	b.ReportMetric(median(times[3]), "governor-noserve-ms")
	b.ReportMetric(median(ratios(3)), "governor-noserve-x-flock")
	// One line CI keeps (.ci/run prints it at its end), not an assertion.
	// The benchmark runs once with b.N=1 before the run asked for, and go
	// test prints the benchmark's name before the line: take the last
	// match of 'RATIO .*'.
	fmt.Printf("RATIO run_true_vs_flock=%.2f nocgo=%.2f n=%d flock_ms=%.2f run_ms=%.2f noserve=%.2f\n",
		median(ratios(1)), median(ratios(2)), b.N, median(times[0]), median(times[1]), median(ratios(3)))
}

// staticBuilds builds governor into dir as the release does
// (release/build-binary.sh: CGO_ENABLED=0, stripped): the archives' full
// binary and the clients' (the wheels' and npm packages') without serve
// (-tags governor_noserve).
func staticBuilds(b *testing.B, dir string) (nocgo, noserve string) {
	// -s: no symbol table, and so no DWARF either (-w), as released.
	nocgo, err := proctest.BuildGovernorAs(dir, "governor-nocgo", "CGO_ENABLED=0", "GOFLAGS=-ldflags=-s")
	if err != nil {
		b.Fatal(err)
	}
	noserve, err = proctest.BuildGovernorAs(dir, "governor-noserve", "CGO_ENABLED=0", "GOFLAGS=-tags=governor_noserve -ldflags=-s")
	if err != nil {
		b.Fatal(err)
	}
	return nocgo, noserve
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}
