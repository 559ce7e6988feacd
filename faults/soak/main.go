//go:build linux

// Command soak runs every way into governor at once against one store
// (the file backend or a redis-server it starts) for a given duration:
// `governor run` loops whose commands record their work, shell
// acquire/renew/release loops, Python and TypeScript clients, a Go
// process granting from a capacity share (its hold mode), admin
// actions and a polled `serve`; it injects faults on a random schedule
// from a seed it prints, checks invariants as it goes and at the end, and
// writes a report. It exits 1 when an invariant was violated.
//
//	go run ./faults/soak -duration 1h -backend file -seed 1 -report soak-file.md
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/governor-dev/governor/internal/proctest"
)

// options are the command's flags.
type options struct {
	duration time.Duration
	backend  string
	seed     uint64
	report   string
	runs     int
	shells   int
	bin      string
	root     string
	faults   bool
	loss     bool
	verbose  bool
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == workArg {
		os.Exit(work(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == holdArg {
		os.Exit(hold(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == rateArg {
		os.Exit(rate(os.Args[2:]))
	}
	if code, done := contain(); done {
		os.Exit(code)
	}
	var o options
	flag.DurationVar(&o.duration, "duration", 2*time.Minute, "how long the load and the faults run")
	flag.StringVar(&o.backend, "backend", "file", "file or redis (a redis-server the soak starts)")
	flag.Uint64Var(&o.seed, "seed", 0, "seed of the fault schedule and the load (0: from the clock, printed)")
	flag.StringVar(&o.report, "report", "", "write the report (Markdown) to this file too")
	flag.IntVar(&o.runs, "runs", 3, "'governor run' loops")
	flag.IntVar(&o.shells, "shells", 2, "shell acquire/renew/release loops")
	flag.StringVar(&o.bin, "bin", "", "governor binary (default: built from this module)")
	flag.StringVar(&o.root, "root", ".", "the module's root (the clients' sources)")
	flag.BoolVar(&o.faults, "faults", true, "inject faults (false: the load alone)")
	flag.BoolVar(&o.loss, "loss", true, "Redis: inject the faults that lose its data (FLUSHALL, restarts); false: cuts, stalls and a restart with persistence only")
	flag.BoolVar(&o.verbose, "v", false, "log every fault and admin action as it happens")
	flag.Parse()
	if flag.NArg() != 0 {
		fmt.Fprintf(os.Stderr, "soak: unexpected arguments %q\n", flag.Args())
		os.Exit(2)
	}
	if o.backend != "file" && o.backend != "redis" {
		fmt.Fprintf(os.Stderr, "soak: -backend %q: want file or redis\n", o.backend)
		os.Exit(2)
	}
	if o.duration <= 0 || o.runs < 1 || o.shells < 0 {
		fmt.Fprintln(os.Stderr, "soak: -duration and -runs must be positive, -shells not negative")
		os.Exit(2)
	}
	if r, err := filepath.Abs(o.root); err == nil {
		o.root = r
	}
	if o.seed == 0 {
		o.seed = uint64(time.Now().UnixNano())
	}
	fmt.Printf("soak: backend %s, duration %v, seed %d (rerun with -seed %d)\n", o.backend, o.duration, o.seed, o.seed)
	os.Exit(run(o))
}

func run(o options) int {
	dir, err := os.MkdirTemp("", "governor-soak-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		return 2
	}
	s := &soak{o: o, dir: dir, rng: rand.New(rand.NewPCG(o.seed, o.seed^0x9e3779b97f4a7c15)), start: time.Now()}
	defer s.cleanup()
	// The binary lives in the soak's directory: its path in every command
	// line is how the soak finds its processes.
	if o.bin == "" {
		s.bin, err = proctest.BuildGovernor(dir)
	} else {
		s.bin, err = copyExecutable(o.bin, filepath.Join(dir, "governor"))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		return 2
	}
	if s.self, err = os.Executable(); err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		return 2
	}
	if s.bin, err = filepath.Abs(s.bin); err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		return 2
	}
	if err := s.setup(); err != nil {
		fmt.Fprintln(os.Stderr, "soak: setup:", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.duration)
	defer cancel()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-sigs
		fmt.Println("soak: interrupted: stopping the load and checking")
		cancel()
	}()
	s.runLoad(ctx)
	s.finalChecks()
	rep := s.reportText()
	fmt.Print(rep)
	if o.report != "" {
		if err := os.WriteFile(o.report, []byte(rep), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "soak: report:", err)
		}
	}
	if n := s.violationCount(); n > 0 {
		fmt.Printf("soak: FAIL: %d invariant violations (seed %d)\n", n, o.seed)
		return 1
	}
	fmt.Printf("soak: PASS (seed %d)\n", o.seed)
	return 0
}

// copyExecutable copies the executable src to dst and returns dst.
func copyExecutable(src, dst string) (string, error) {
	b, err := os.ReadFile(src)
	if err != nil {
		return "", err
	}
	return dst, os.WriteFile(dst, b, 0o700)
}
