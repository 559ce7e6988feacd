//go:build linux

package main

import (
	"context"
	"sort"
	"syscall"
	"time"
)

// procFault is a signal to one process of a kind, picked at random:
// SIGKILL, or SIGSTOP then SIGCONT after a pause drawn up to maxStop.
type procFault struct {
	name    string
	kinds   []string
	stop    bool
	minStop time.Duration
	maxStop time.Duration
	group   bool // signal the process group (a shell loop and its work)
	weight  int  // how often it is drawn against the others (0: 1)
}

// procFaults are the soak's process faults. A stop is bounded where
// nothing stops the protected work past its lease: a shell loop's or a
// client's own bridge stopped past the TTL would let its work run on
// after its lease expired, which is no guarantee governor gives (the
// holder must renew); a governor run stopped past its TTL is the
// watchdog's case. A Go Hold process stopped past its capacity lease
// stops granting on its clock, but the chunk it was in ends after its
// share went elsewhere: its stops stay under the lease less a refresh.
var procFaults = []procFault{
	{name: "SIGKILL governor run", kinds: []string{"governor run"}, weight: 2},
	{name: "SIGSTOP governor run (0.5-8 s, past the TTL too)", kinds: []string{"governor run"}, stop: true, minStop: 500 * time.Millisecond, maxStop: 8 * time.Second, weight: 3},
	{name: "SIGKILL watchdog", kinds: []string{"watchdog"}},
	{name: "SIGSTOP watchdog (0.3-2 s)", kinds: []string{"watchdog"}, stop: true, minStop: 300 * time.Millisecond, maxStop: 2 * time.Second},
	{name: "SIGKILL bridge", kinds: []string{"bridge"}},
	{name: "SIGSTOP bridge (0.3-1.5 s)", kinds: []string{"bridge"}, stop: true, minStop: 300 * time.Millisecond, maxStop: 1500 * time.Millisecond},
	{name: "SIGKILL client (Python, TypeScript)", kinds: []string{"python", "node"}},
	{name: "SIGSTOP client (0.3-5 s)", kinds: []string{"python", "node"}, stop: true, minStop: 300 * time.Millisecond, maxStop: 5 * time.Second},
	{name: "SIGKILL Go Hold process (capacity share)", kinds: []string{"go hold"}},
	{name: "SIGSTOP Go Hold process (0.3-4 s, under its capacity lease)", kinds: []string{"go hold"}, stop: true, minStop: 300 * time.Millisecond, maxStop: 4 * time.Second},
	{name: "SIGKILL Go rate process (rate share, or central)", kinds: []string{"go rate"}},
	{name: "SIGSTOP Go rate process (0.3-8 s, past its capacity lease too)", kinds: []string{"go rate"}, stop: true, minStop: 300 * time.Millisecond, maxStop: 8 * time.Second},
	{name: "SIGKILL shell loop (its process group)", kinds: []string{"shell"}, group: true},
	{name: "SIGSTOP shell loop (0.2-0.8 s)", kinds: []string{"shell"}, group: true, stop: true, minStop: 200 * time.Millisecond, maxStop: 800 * time.Millisecond},
	{name: "SIGKILL serve", kinds: []string{"serve"}},
}

// faultLoop injects one fault every 1-4 s until ctx ends: a process
// fault or one of the store's, drawn from the seeded generator.
func (s *soak) faultLoop(ctx context.Context) {
	storeFaults := s.st.faults()
	var names []string
	for n := range storeFaults {
		names = append(names, n)
	}
	sort.Strings(names) // map order is random: the schedule must follow the seed
	for sleepCtx(ctx, time.Duration(1000+s.intn(3000))*time.Millisecond) {
		// A store fault one time in five.
		if len(names) > 0 && s.intn(5) == 0 {
			n := names[s.intn(len(names))]
			s.fault(n)
			storeFaults[n](ctx)
			continue
		}
		s.procFault(ctx, pickFault(s.intn(faultWeights())))
	}
}

func faultWeights() int {
	n := 0
	for _, f := range procFaults {
		n += max(f.weight, 1)
	}
	return n
}

// pickFault returns the fault at position r of the weighted table.
func pickFault(r int) procFault {
	for _, f := range procFaults {
		if r -= max(f.weight, 1); r < 0 {
			return f
		}
	}
	return procFaults[len(procFaults)-1]
}

func (s *soak) procFault(ctx context.Context, f procFault) {
	var cands []ourProc
	procs := s.scan()
	working := map[int]bool{} // governor runs whose command works
	for _, p := range procs {
		if p.kind == "work" {
			working[p.PPID] = true
		}
	}
	for _, p := range procs {
		for _, k := range f.kinds {
			// A stop of a governor run is of one whose command works: a
			// waiting one stopped tells nothing.
			if p.kind == k && !(k == "shell" && p.PGID != p.PID) && !(k == "governor run" && f.stop && !working[p.PID]) {
				cands = append(cands, p)
			}
		}
	}
	if len(cands) == 0 {
		return
	}
	p := cands[s.intn(len(cands))]
	send := func(sig syscall.Signal) {
		if f.group {
			_ = syscall.Kill(-p.PGID, sig)
			return
		}
		_ = sendTo(p, sig)
	}
	if !f.stop {
		s.markKilled(p.PID)
		send(syscall.SIGKILL)
		s.fault(f.name)
		return
	}
	d := f.minStop + time.Duration(s.intn(int((f.maxStop-f.minStop)/time.Millisecond)+1))*time.Millisecond
	send(syscall.SIGSTOP)
	s.fault(f.name)
	t := time.NewTimer(d)
	select {
	case <-t.C:
	case <-ctx.Done():
		t.Stop()
	}
	send(syscall.SIGCONT)
}
