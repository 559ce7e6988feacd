//go:build linux

package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The resources of the soak's project, and their configured limits.
const (
	project     = "soak"
	resHeavy    = "heavy"         // governor run loops; its limit is changed live
	resShell    = "shell"         // shell acquire/renew/release loops
	resShared   = "shared"        // the Python and TypeScript clients
	resProvider = "provider:fake" // leased: the clients' bridges grant from shares, a run loop centrally
	limProvider = 4
	limHeavy    = 2
	limShell    = 2
	limShared   = 3
	leaseTTL    = 3 * time.Second
	// orphanBound is how long a process of governor's (a watchdog, a
	// command) may live on once nothing of the soak's own tree is its
	// parent: the watchdog's sweep budget (30 s) bounds it in the worst
	// case; in practice a sweep takes a second plus the event's record
	// (5 s at most).
	orphanBound = 35 * time.Second
	// capLease and capRefresh are the capacity lease of resProvider
	// (capacity: true): longer than leaseTTL, so that a share is told
	// from a single grant in the holders (checkShares).
	capLease   = 6 * time.Second
	capRefresh = time.Second
)

// soak is one run of the harness.
type soak struct {
	o     options
	dir   string
	bin   string // the governor binary
	self  string // this program, whose "work" mode is the protected work
	start time.Time

	rngMu sync.Mutex
	rng   *rand.Rand

	st store

	cfg    string // the config file
	work   string // directory of the work-interval files
	recs   string // directory of the run records
	logs   string // directory of the shell loops' grant logs
	limits limitLog
	mono0  int64   // CLOCK_MONOTONIC at the start
	losses []int64 // CLOCK_MONOTONIC of each loss of Redis's data
	w      *watch  // the monitor's state
	port   int     // serve's port

	mu         sync.Mutex
	ops        map[string]int // operations done, by kind
	faults     map[string]int // faults injected, by kind
	skipped    map[string]string
	violations []string
	checked    map[string]int // invariant checks done, by invariant
	worst      map[string]float64
	samples    map[string]string // the first stderr of each kind of failed exit
	killed     map[int]bool      // pids the soak killed (their end records may be missing)
	procs      map[int]string
	wg         sync.WaitGroup
}

func (s *soak) intn(n int) int {
	s.rngMu.Lock()
	defer s.rngMu.Unlock()
	return s.rng.IntN(n)
}

func (s *soak) op(kind string) {
	s.mu.Lock()
	if s.ops == nil {
		s.ops = map[string]int{}
	}
	s.ops[kind]++
	s.mu.Unlock()
}

func (s *soak) fault(kind string) {
	s.mu.Lock()
	if s.faults == nil {
		s.faults = map[string]int{}
	}
	s.faults[kind]++
	s.mu.Unlock()
	if s.o.verbose {
		fmt.Printf("soak: %7.3fs fault %s\n", s.rel(mono()), kind)
	}
}

func (s *soak) skip(what, why string) {
	s.mu.Lock()
	if s.skipped == nil {
		s.skipped = map[string]string{}
	}
	s.skipped[what] = why
	s.mu.Unlock()
	fmt.Printf("soak: skipped %s: %s\n", what, why)
}

// violate records an invariant violation with its evidence.
func (s *soak) violate(invariant, format string, args ...any) {
	msg := fmt.Sprintf("%s: %s", invariant, fmt.Sprintf(format, args...))
	s.mu.Lock()
	for _, v := range s.violations {
		if v == msg { // a later check of the same data finds it again
			s.mu.Unlock()
			return
		}
	}
	s.violations = append(s.violations, msg)
	s.mu.Unlock()
	fmt.Printf("soak: %7.3fs VIOLATION %s\n", s.rel(mono()), msg)
}

func (s *soak) check(invariant string, n int) {
	s.mu.Lock()
	if s.checked == nil {
		s.checked = map[string]int{}
	}
	s.checked[invariant] += n
	s.mu.Unlock()
}

// worstAt keeps the largest value seen of figure.
func (s *soak) worstAt(figure string, v float64) {
	s.mu.Lock()
	if s.worst == nil {
		s.worst = map[string]float64{}
	}
	if old, ok := s.worst[figure]; !ok || v > old {
		s.worst[figure] = v
	}
	s.mu.Unlock()
}

// sample keeps the first stderr of kind, for the report.
func (s *soak) sample(kind, stderr string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.samples == nil {
		s.samples = map[string]string{}
	}
	if _, ok := s.samples[kind]; !ok {
		s.samples[kind] = tail(stderr)
	}
}

func (s *soak) violationCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.violations)
}

// track registers a process the soak started, by kind, until it ends.
func (s *soak) track(pid int, kind string) {
	s.mu.Lock()
	if s.procs == nil {
		s.procs = map[int]string{}
	}
	s.procs[pid] = kind
	s.mu.Unlock()
}

func (s *soak) untrack(pid int) {
	s.mu.Lock()
	delete(s.procs, pid)
	s.mu.Unlock()
}

// tracked returns the live pids of kind the soak started.
func (s *soak) tracked(kind string) []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var pids []int
	for pid, k := range s.procs {
		if k == kind {
			pids = append(pids, pid)
		}
	}
	sort.Ints(pids)
	return pids
}

func (s *soak) markKilled(pid int) {
	s.mu.Lock()
	if s.killed == nil {
		s.killed = map[int]bool{}
	}
	s.killed[pid] = true
	s.mu.Unlock()
}

func (s *soak) wasKilled(pid int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.killed[pid]
}

func (s *soak) setup() error {
	s.work = filepath.Join(s.dir, "work")
	s.recs = filepath.Join(s.dir, "records")
	s.logs = filepath.Join(s.dir, "logs")
	for _, d := range []string{s.work, s.recs, s.logs} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	s.cfg = filepath.Join(s.dir, "exec-defaults.yaml")
	cfg := fmt.Sprintf("project: %s\nlease:\n  ttl: %s\n  heartbeat: 1s\nproviders:\n  fake:\n    max_concurrency: %d\n    capacity: true\n    capacity_lease: %s\n    capacity_refresh: %s\n  %s: {max_concurrency: 20}\n%sresources:\n  %s: {limit: %d}\n  %s: {limit: %d}\n  %s: {limit: %d}\n%s",
		project, leaseTTL, limProvider, capLease, capRefresh, budgetProvider, rateConfig(), resHeavy, limHeavy, resShell, limShell, resShared, limShared, budgetConfig())
	if err := os.WriteFile(s.cfg, []byte(cfg), 0o600); err != nil {
		return err
	}
	s.mono0 = mono()
	s.limits.set(resHeavy, limHeavy, mono())
	s.limits.set(resShell, limShell, mono())
	s.limits.set(resShared, limShared, mono())
	s.limits.set(resProvider, limProvider, mono())
	var err error
	if s.o.backend == "redis" {
		s.st, err = newRedisStore(s)
	} else {
		s.st, err = newFileStore(s)
	}
	return err
}

// global is the flags that select the soak's config and store.
func (s *soak) global() []string {
	return append([]string{"--config", s.cfg}, s.st.flags()...)
}

// gov returns a governor command with the soak's global flags.
func (s *soak) gov(ctx context.Context, args ...string) *exec.Cmd {
	c := exec.CommandContext(ctx, s.bin, append(s.global(), args...)...)
	// The end of the load kills what is still running: the soak's own
	// signal, not a crash.
	c.Cancel = func() error {
		s.markKilled(c.Process.Pid)
		return c.Process.Kill()
	}
	c.Env = s.env()
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.WaitDelay = 5 * time.Second
	return c
}

// env is the environment of every process the soak starts: without the
// caller's GOVERNOR_* variables, with the store's.
func (s *soak) env(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOVERNOR_") {
			env = append(env, kv)
		}
	}
	env = append(env, "GOVERNOR_BIN="+s.bin, "SOAK_MARK="+s.dir)
	if s.st != nil {
		// The store's, for the clients' bridges, which take no flags:
		// without it they would share the default state directory
		// (with every other soak on the machine), not the soak's store.
		env = append(env, s.st.env()...)
	}
	return append(env, extra...)
}

// runLoad starts the load, the faults and the monitor, and returns when
// ctx ends and every loop has finished its last round.
func (s *soak) runLoad(ctx context.Context) {
	mctx, mcancel := context.WithCancel(context.Background())
	mdone := make(chan struct{})
	go func() { s.monitor(mctx); close(mdone) }()
	for i := 0; i < s.o.runs; i++ {
		s.goLoop(ctx, func(ctx context.Context) { s.runLoop(ctx, resHeavy, i) })
	}
	// Central grants of the leased provider, beside the clients' shares.
	s.goLoop(ctx, func(ctx context.Context) { s.runLoop(ctx, resProvider, 0) })
	for i := 0; i < s.o.shells; i++ {
		s.goLoop(ctx, func(ctx context.Context) { s.shellLoop(ctx, i) })
	}
	s.goLoop(ctx, s.clients)
	s.goLoop(ctx, s.rateClients)
	for range 2 {
		s.goLoop(ctx, s.budgetLoop)
	}
	s.goLoop(ctx, s.serveLoop)
	s.goLoop(ctx, s.adminLoop)
	s.goLoop(ctx, s.badInputLoop)
	if s.o.faults {
		s.goLoop(ctx, s.faultLoop)
	}
	<-ctx.Done()
	s.wg.Wait()
	s.st.heal()
	// Quiet: nothing runs; the processes left must end within their bound.
	s.quiet(mctx)
	mcancel()
	<-mdone
}

func (s *soak) goLoop(ctx context.Context, f func(context.Context)) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f(ctx)
	}()
}

func (s *soak) cleanup() {
	if s.st != nil {
		s.st.close()
	}
	killMarked(s.dir)
	if os.Getenv("SOAK_KEEP") == "" {
		_ = os.RemoveAll(s.dir)
	} else {
		fmt.Println("soak: kept", s.dir)
	}
}

func (s *soak) monoStart() int64 { return s.mono0 }

// lost records that Redis is about to lose data (FLUSHALL, a restart).
// With all its data (wiped), the live limit goes too: the configured
// one is in force again.
func (s *soak) lost(wiped bool) {
	now := mono()
	s.mu.Lock()
	s.losses = append(s.losses, now)
	s.mu.Unlock()
	if wiped {
		s.limits.wiped(resHeavy, limHeavy, now)
	}
}

// lossWindow is how long after Redis lost its data the waiters come
// back to its queue, in the order they come (checkOrder): the old
// holders learn of the loss at their next heartbeat (1 s) and stop their
// commands (kill grace 0.5 s); the TTL bounds it.
const lossWindow = leaseTTL + 2*time.Second

// afterLoss reports whether t (CLOCK_MONOTONIC) is within lossWindow
// after a loss of Redis's data, and the latest such loss.
func (s *soak) afterLoss(t int64) (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := int64(0), false
	for _, l := range s.losses {
		if t >= l && t-l <= lossWindow.Nanoseconds() {
			at, ok = l, true
		}
	}
	return at, ok
}

// sleepCtx waits d or until ctx ends; it reports whether ctx is still live.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
