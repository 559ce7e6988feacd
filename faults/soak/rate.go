//go:build linux

package main

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/governor-dev/governor/config"
	"github.com/governor-dev/governor/governor"
)

// The leased rate: provider rateProvider's requests per minute
// (capacity: true) are granted by Go processes from their rate shares
// (the rate mode, leased) and by one taking them centrally beside them
// (the rate mode, central). Each call appends "WHO ASKED GRANTED"
// (CLOCK_MONOTONIC ns: before it asked, and inside the call) to
// rate-WHO.grants; checkRate then counts the calls surely granted inside
// each window of a minute.
const (
	rateArg      = "rate"
	rateProvider = "fakerate"
	resRate      = "provider:" + rateProvider
	rateRPM      = 600
	rateBurst    = 20
	// rateLossSlack is how long after a loss of Redis's data the central
	// path may still grant from the wiped key's fresh bucket: until the
	// first refresh of a share presents its token (capRefresh) and the
	// key learns, a round trip included.
	rateLossSlack = capRefresh + time.Second
)

// rateConfig is the leased rate's provider (under providers:).
func rateConfig() string {
	return fmt.Sprintf("  %s:\n    requests_per_minute: %d\n    burst: %d\n    capacity: true\n    capacity_lease: %s\n    capacity_refresh: %s\n",
		rateProvider, rateRPM, rateBurst, capLease, capRefresh)
}

// rate is the rate mode: four goroutines calling rateProvider's
// Provider.Do as fast as it grants, from the process's rate share
// (leased) or each call reserved centrally (central). It exits after
// 30 s without a grant (the soak starts it again), and at SIGTERM (its
// Close gives the share back). Argv: SPANDIR WHO leased|central.
func rate(args []string) int {
	if len(args) != 3 || args[2] != "leased" && args[2] != "central" {
		fmt.Fprintln(os.Stderr, "soak rate: want SPANDIR WHO leased|central")
		return 2
	}
	return goProcess("soak rate", args[2] == "leased", filepath.Join(args[0], "rate-"+args[1]+".grants"),
		func(l *config.Loaded, g *governor.Governor, f *os.File, last *atomic.Int64) {
			p := g.Provider(rateProvider, l.Config.Providers[rateProvider].ProviderLimits())
			for n := range 4 {
				go rateLoop(p, f, fmt.Sprintf("%s.g%d", args[1], n), last)
			}
		})
}

// rateLoop calls p over and over, a pause of up to 20 ms between calls.
func rateLoop(p *governor.Provider, f *os.File, name string, last *atomic.Int64) {
	rng := rand.New(rand.NewPCG(uint64(os.Getpid()), uint64(len(name))))
	said := false
	for {
		asked := mono()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := p.Do(ctx, 0, func(context.Context) (int64, error) {
			fmt.Fprintf(f, "%s %d %d\n", name, asked, mono())
			return 0, nil
		})
		cancel()
		if err != nil {
			if !said { // the first, for the soak's sample of a failed exit
				fmt.Fprintln(os.Stderr, "soak rate:", err)
				said = true
			}
			time.Sleep(100 * time.Millisecond)
			continue
		}
		last.Store(mono())
		time.Sleep(time.Duration(rng.IntN(20)) * time.Millisecond)
	}
}

// rateClients keeps two leased rate processes and a central one running
// until ctx ends.
func (s *soak) rateClients(ctx context.Context) {
	done := make(chan struct{}, 3)
	for i, way := range []string{"leased", "leased", "central"} {
		what, prefix := "go rate", fmt.Sprintf("%s%d.", way, i) // its grants: rate-WAYi.N.grants
		if way == "central" {
			what = "go rate central"
		}
		go func() {
			s.clientLoop(ctx, what, prefix, func(who string) *exec.Cmd {
				c := exec.Command(s.self, rateArg, s.work, who, way)
				c.Env = s.env("CFG=" + s.cfg)
				return c
			})
			done <- struct{}{}
		}()
	}
	for range 3 {
		<-done
	}
}

// rateGrant is one call's grant: it was decided between asked and
// granted (CLOCK_MONOTONIC ns).
type rateGrant struct{ asked, granted int64 }

// readRateGrants reads every rate-*.grants file; a line cut by a kill
// is left out.
func (s *soak) readRateGrants() (leased, central int, gs []rateGrant) {
	files, _ := filepath.Glob(filepath.Join(s.work, "rate-*.grants"))
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			if len(fs) != 3 {
				continue
			}
			a, err1 := strconv.ParseInt(fs[1], 10, 64)
			b, err2 := strconv.ParseInt(fs[2], 10, 64)
			if err1 != nil || err2 != nil || b < a {
				continue
			}
			gs = append(gs, rateGrant{a, b})
			if strings.HasPrefix(filepath.Base(p), "rate-central") {
				central++
			} else {
				leased++
			}
		}
		f.Close()
	}
	return leased, central, gs
}

// rateBound is the most calls the leased rate may grant in the minute
// from w (CLOCK_MONOTONIC ns): the central limiter's own bound (its rate
// and its burst), plus a burst for the tokens a shrinking share keeps
// while its refresh is in flight (docs/capacity.md), plus, for each loss
// of Redis's data within the window or rateLossSlack before it, the
// wiped key's fresh burst and what the central path may take at the
// full rate until the key learns.
func (s *soak) rateBound(w int64) int {
	bound := rateRPM + 2*rateBurst
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range s.losses {
		if l >= w-rateLossSlack.Nanoseconds() && l < w+time.Minute.Nanoseconds() {
			bound += rateBurst + int(rateRPM*rateLossSlack/time.Minute)
		}
	}
	return bound
}

// checkRate checks that no minute granted more of the leased rate than
// its bound: a call counts in the window from w when it surely was
// granted inside it (asked at w or later, granted before its end), so
// a process stopped between its grant and its line never counts twice
// nor makes a window look fuller than it was. Every window that starts
// at a call's asking is checked (the fullest windows start there).
func (s *soak) checkRate() int {
	leased, central, gs := s.readRateGrants()
	s.check("leased rate: calls granted from shares ("+resRate+")", leased)
	s.check("leased rate: calls granted centrally beside them ("+resRate+")", central)
	if leased == 0 || central == 0 {
		s.violate("leased rate", "%s: %d calls from shares and %d central in %v: both ways must have been granted", resRate, leased, central, s.o.duration)
	}
	slices.SortFunc(gs, func(a, b rateGrant) int { return int(a.asked - b.asked) })
	minute := time.Minute.Nanoseconds()
	worst, n := 0, 0
	for i, g := range gs {
		w, count := g.asked, 0
		for _, h := range gs[i:] {
			if h.asked >= w+minute {
				break
			}
			if h.granted < w+minute {
				count++
			}
		}
		n++
		worst = max(worst, count)
		if b := s.rateBound(w); count > b {
			s.violate("leased rate", "%d calls of %s granted in the minute from %.3fs; bound %d (%d per minute, burst %d)",
				count, resRate, s.rel(w), b, rateRPM, rateBurst)
		}
	}
	s.worstAt(fmt.Sprintf("most calls of %s granted in a minute (%d per minute, burst %d)", resRate, rateRPM, rateBurst), float64(worst))
	return n
}
