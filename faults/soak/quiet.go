//go:build linux

package main

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// quiet runs once the load has stopped: it measures the idle CPU of a
// holding `governor run` (governor and its watchdog), a serve and a
// bridge, from their own CPU time (utime+stime), not wall time, so that a
// loaded machine does not count; then it waits for every process of the
// soak's to end within its bound.
func (s *soak) quiet(ctx context.Context) {
	hold := s.gov(context.Background(), "run", "--resource", resHeavy, "--", "sleep", "14")
	serve := s.gov(context.Background(), "serve", "--listen", "127.0.0.1:0")
	bridge := s.gov(context.Background(), "bridge")
	var bin bytes.Buffer
	// A bridge that holds a slot, idle: hello, then an acquire.
	bin.WriteString(`{"id":1,"op":"hello","args":{"protocol":1,"client":"soak","pid":` + strconv.Itoa(syscall.Getpid()) + `}}` + "\n")
	bin.WriteString(`{"id":2,"op":"acquire","args":{"resources":["shared"],"if_busy":"wait"}}` + "\n")
	bridgeIn, _ := bridge.StdinPipe()
	for _, c := range []*exec.Cmd{hold, serve, bridge} {
		if err := start(c); err != nil {
			s.violate("start", "quiet phase: %v", err)
			return
		}
	}
	_, _ = bridgeIn.Write(bin.Bytes())
	sleepCtx(ctx, 3*time.Second) // started, granted, settled
	procs := map[string]int{"governor run (holding, idle)": hold.Process.Pid, "serve (not polled)": serve.Process.Pid, "bridge (holding, idle)": bridge.Process.Pid}
	for _, p := range s.scan() {
		if p.kind == "watchdog" {
			procs["watchdog (idle)"] = p.PID
		}
	}
	before := map[string]int64{}
	for k, pid := range procs {
		before[k], _, _ = cpuTicks(pid)
	}
	const window = 10 * time.Second
	sleepCtx(ctx, window)
	for k, pid := range procs {
		t, _, ok := cpuTicks(pid)
		if !ok {
			s.violate("idle CPU", "%s pid %d ended during the measurement", k, pid)
			continue
		}
		frac := float64(t-before[k]) / 100 / window.Seconds() // USER_HZ is 100 on Linux
		s.worstAt("idle CPU of a governor process, own CPU time / wall (%)", 100*frac)
		s.check("idle CPU near zero (processes)", 1)
		if frac > 0.03 {
			s.violate("idle CPU", "%s pid %d used %.1f%% of a CPU (own time) idle over %v", k, pid, 100*frac, window)
		}
	}
	_ = bridgeIn.Close() // the bridge releases and exits
	_ = serve.Process.Signal(syscall.SIGTERM)
	for _, c := range []*exec.Cmd{hold, serve, bridge} {
		_ = c.Wait()
	}
	// Every process of the soak's ends within its bound.
	deadline := time.Now().Add(orphanBound)
	for {
		left := s.scan()
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			for _, p := range left {
				s.violate("outlived", "%s pid %d (%s) still alive %v after the load stopped", p.kind, p.PID, p.cmd, orphanBound)
			}
			break
		}
		sleepCtx(ctx, 500*time.Millisecond)
	}
	s.check("no process outlives its run beyond its bound (end)", 1)
}

// finalChecks runs the checks over everything recorded.
func (s *soak) finalChecks() {
	for _, r := range []string{resHeavy, resShell, resShared, resProvider} {
		n, worst := s.checkLimit(r)
		what := r
		if r == resProvider {
			what += ", leased: shares and central grants"
		}
		s.check("weight in use never above the limit in force ("+what+" spans)", n)
		s.worstAt("largest use seen of "+r+" (configured limit "+strconv.Itoa(s.limits.allowed(r, s.mono0+1e9, 0))+")", float64(worst))
	}
	s.check("budget: calls admitted per window never above its limit, before and after each loss (budget log)", s.checkBudget())
	s.check("every grant's token increasing (run records)", s.checkRecords())
	s.check("every grant's token increasing (shell loops)", s.checkShellLogs())
	s.check("calls of the leased rate in a minute never above its bound (rate grants)", s.checkRate())
	s.checkWays()
	if s.w != nil {
		s.checkRSS(s.w)
		s.checkSizes(s.w)
		s.checkShares(s.w)
	}
}

// checkSizes checks the store's size stays bounded: its largest in the
// run's second half at most twice its largest in the first, plus slack
// (1 MiB, or 200 keys); and the final size after retention under an
// absolute bound (8 MiB, or 2000 keys).
func (s *soak) checkSizes(w *watch) {
	what, final := s.st.size()
	s.worstAt("final "+what, float64(final))
	if n := len(w.sizes); n >= 4 {
		a, b := maxOf(w.sizes[:n/2]), maxOf(w.sizes[n/2:])
		slack := int64(1 << 20)
		if what == "redis keys" {
			slack = 200
		}
		s.worstAt("largest "+what+" during the run", float64(max(a, b)))
		s.check("state bounded (size samples)", n)
		if b > 2*a+slack {
			s.violate("state bounded", "%s grew from at most %d in the first half to %d in the second", what, a, b)
		}
	}
	limit := int64(8 << 20)
	if what == "redis keys" {
		limit = 2000
	}
	if final > limit {
		s.violate("state bounded", "%s %d at the end (bound %d): %s", what, final, limit, filepath.Base(s.dir))
	}
}

func maxOf(v []int64) int64 {
	m := v[0]
	for _, x := range v {
		m = max(m, x)
	}
	return m
}
