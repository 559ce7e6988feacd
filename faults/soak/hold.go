//go:build linux

package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/governor-dev/governor/config"
	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/connect"
)

// holdArg is the first argument of this program's hold mode: a Go
// process taking resProvider's slots with Governor.Acquire from its
// capacity share (connect.Options.Capacity, as the bridge opens its
// Governor), four goroutines each working in 20 ms chunks appended to
// SPANDIR/RES-WHO.spans, stopping the moment its grant is lost. The
// config is $CFG, the store the environment's. It exits after 30 s
// without a grant (the soak starts it again). Argv: SPANDIR WHO.
const holdArg = "hold"

func hold(args []string) int {
	if len(args) != 2 {
		fmt.Fprintln(os.Stderr, "soak hold: want SPANDIR WHO")
		return 2
	}
	return goProcess("soak hold", true, filepath.Join(args[0], resProvider+"-"+args[1]+".spans"),
		func(_ *config.Loaded, g *governor.Governor, f *os.File, last *atomic.Int64) {
			for n := range 4 {
				go holdLoop(g, f, fmt.Sprintf("%s.g%d", args[1], n), last)
			}
		})
}

// goProcess is a Go process of the soak's (the hold and rate modes): it
// opens a Governor from $CFG and the environment's store (with
// Options.Capacity when leased) and the file at path, starts its loops
// (which store the time of their last grant in last), and returns 0 at
// SIGTERM (the soak's end: Close gives its shares back at once), 3
// after 30 s without a grant (the soak starts it again), 2 when it
// cannot start.
func goProcess(what string, leased bool, path string, loops func(*config.Loaded, *governor.Governor, *os.File, *atomic.Int64)) int {
	l, err := config.Load(config.LoadOptions{File: os.Getenv("CFG")})
	if err != nil {
		fmt.Fprintln(os.Stderr, what+":", err)
		return 2
	}
	g, err := connect.Open(context.Background(), l, os.Environ(), connect.Options{Command: what, Capacity: leased})
	if err != nil {
		fmt.Fprintln(os.Stderr, what+":", err)
		return 2
	}
	defer g.Close()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, what+":", err)
		return 2
	}
	var last atomic.Int64
	last.Store(mono())
	loops(l, g, f, &last)
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	for mono()-last.Load() < (30 * time.Second).Nanoseconds() {
		select {
		case <-term:
			return 0
		case <-time.After(time.Second):
		}
	}
	return 3
}

// holdLoop takes a slot, works 2 to 30 chunks, releases it, and again.
func holdLoop(g *governor.Governor, f *os.File, name string, last *atomic.Int64) {
	rng := rand.New(rand.NewPCG(uint64(os.Getpid()), uint64(len(name))))
	said := false
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		l, err := g.Acquire(ctx, resProvider, governor.AcquireOptions{Limit: limProvider, Mode: governor.Wait})
		cancel()
		if err != nil {
			if !said { // the first, for the soak's sample of a failed exit
				fmt.Fprintln(os.Stderr, "soak hold:", err)
				said = true
			}
			time.Sleep(100 * time.Millisecond)
			continue
		}
		last.Store(mono())
		for range 2 + rng.IntN(29) {
			start := mono()
			t := time.NewTimer(20 * time.Millisecond)
			lost := false
			select {
			case <-l.Done(): // a chunk stops the moment the grant is lost
				lost = true
				t.Stop()
			case <-t.C:
			}
			fmt.Fprintf(f, "%s %d %d\n", name, start, mono())
			if lost {
				break
			}
		}
		_ = l.Release()
	}
}
