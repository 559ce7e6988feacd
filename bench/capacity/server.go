package main

import (
	"math"
	"slices"
)

// pooled: under governor, a process leases the whole slots of its
// entitlement and asks per grant (two round trips: acquire and release),
// from the slots no share holds, for the fraction beyond them; a process
// wanting under one slot asks per grant alone. A share of a fraction of
// a slot would be a whole slot held for a fraction's use.
func (w *world) pooled(p *proc) bool {
	return w.pol == central || (w.pol == governorFair && w.kind == concurrency && w.wantOf(p) < 1)
}

// residual is what a process asks per grant: all it wants when it is
// pooled, and under governor the fraction beyond its share of slots.
func (w *world) residual(p *proc) float64 {
	switch {
	case w.pooled(p) && p.share == 0:
		return w.wantOf(p)
	case w.pol == governorFair && w.kind == concurrency:
		return max(0, w.wantOf(p)-p.share)
	}
	return 0
}

// call is one backend call of process i: it reports what it wants (and,
// for concurrency, what it still uses) and gets its new share with a
// fresh capacity lease. Shares never sum above the capacity: a call gets
// at most what the others do not hold.
func (w *world) call(i int) {
	p := &w.procs[i]
	want := w.wantOf(p)
	if w.pooled(p) && p.has == 0 && p.share == 0 {
		p.want, p.leased = want, false
		return // asks per grant, counted in use
	}
	w.m.call(w)
	w.sumHas -= p.has
	free := w.cap - w.sumHas
	target := w.target(p, want)
	if w.pooled(p) {
		target = 0
	}
	share := max(0, min(target, free))
	if w.kind == concurrency {
		share = math.Floor(share)
	}
	has := share
	if w.pol == governorFair && w.kind == concurrency {
		// A shrink is freed only as its calls end: the server counts
		// what the process still uses until it says it has ended them.
		has = max(share, p.inUse)
	}
	p.has, p.share, p.want, p.leased = has, share, want, share > 0
	w.sumHas += has
	p.leaseEnd, p.expires = w.k+w.ticks.lease, w.k+w.ticks.lease
	if w.kind == rate {
		p.tokens = min(p.tokens, share*w.cfg.BurstSeconds)
	}
}

// target is what the algorithm entitles a process to, in whole slots for
// concurrency (Doorman's shares are fractions, so a slot's can only be
// rounded down; governor asks for the fraction per grant). While learning
// after a loss of the allocator's state, a process keeps what it says it
// has, and a newcomer gets nothing.
func (w *world) target(p *proc, want float64) float64 {
	if w.k < w.learn {
		return p.share
	}
	e := w.entitled(want)
	if w.kind == rate {
		return e
	}
	return math.Floor(e + 1e-6) // the water level is found by bisection, a hair below its value
}

// handOff (governor): capacity freed by a return, an expiry or a
// confirmed shrink goes at once to the processes waiting for it, the
// least served (share over entitlement) first and, among equals, the
// longest waiting; each takes it with one call (its claim).
func (w *world) handOff() {
	free := w.cap - w.sumHas
	if free < 1e-9 || w.k < w.learn {
		return
	}
	type waiter struct {
		i              int
		deficit, ratio float64
	}
	var ws []waiter
	for i := range w.procs {
		p := &w.procs[i]
		if !p.running(w.k) || p.lambda == 0 || w.pooled(p) {
			continue
		}
		e := w.entitled(w.wantOf(p))
		if d := e - p.share; d >= 1 || (w.kind == rate && p.share < e/2) {
			ws = append(ws, waiter{i, d, p.share / e})
		}
	}
	slices.SortFunc(ws, func(a, b waiter) int {
		if a.ratio != b.ratio {
			return cmpFloat(a.ratio, b.ratio)
		}
		if pa, pb := w.procs[a.i].busyAt, w.procs[b.i].busyAt; pa != pb {
			return pa - pb
		}
		return a.i - b.i
	})
	for _, x := range ws {
		g := min(x.deficit, free)
		if w.kind == concurrency {
			g = math.Floor(g)
		}
		if g <= 0 {
			continue
		}
		p := &w.procs[x.i]
		w.m.call(w)
		p.share += g
		p.has += g
		w.sumHas += g
		free -= g
		p.leased = true
		p.leaseEnd, p.expires = w.k+w.ticks.lease, w.k+w.ticks.lease
		if free < 1e-9 {
			return
		}
	}
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// faults: a machine killed (its shares return when their leases end), a
// machine stopped past its leases (its processes grant nothing on their
// own clocks when they resume, before asking again), and the
// allocator's state lost (a learning mode of one lease: no new capacity;
// each process keeps what it says it has).
func (w *world) faults() {
	if !w.cfg.Faults {
		return
	}
	at := func(frac float64) bool { return w.k == int(frac*float64(w.totalTicks())) }
	machine := func(m int, f func(p *proc)) {
		for i := m; i < len(w.procs); i += w.cfg.Machines {
			f(&w.procs[i])
		}
	}
	switch {
	case at(0.6):
		machine(0, func(p *proc) { p.dead, p.lambda, p.inUse, p.busyAt = true, 0, 0, -1 })
	case at(0.7):
		until := w.k + int(w.cfg.Lease*3/2/w.cfg.Tick)
		machine(1, func(p *proc) { p.stoppedUntil, p.busyAt = until, -1 })
	case at(0.8) && w.pol != central:
		for i := range w.procs {
			p := &w.procs[i]
			p.has, p.want, p.expires = 0, 0, 0
		}
		w.sumHas = 0
		w.learn = w.k + w.ticks.lease
	}
	// A process resuming after its lease ended on its own clock grants
	// nothing more (its work stopped with it) and asks again.
	for i := 1; i < len(w.procs); i += w.cfg.Machines {
		p := &w.procs[i]
		if p.stoppedUntil == w.k && w.k > 0 && w.k >= p.leaseEnd {
			p.share, p.inUse, p.tokens = 0, 0, 0
			if p.lambda > 0 && w.pol != central {
				w.call(i)
			}
		}
	}
}
