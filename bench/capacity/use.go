package main

import (
	"math"
	"slices"
)

// use runs one tick of work: each running process uses what it may
// (its share, or the pool's part for the processes that ask per grant).
func (w *world) use() {
	dt := w.dt()
	// The pool (the slots no share holds) serves the grants asked one by
	// one: in FIFO order today (each asker gets the same fraction of what
	// it asks), and under governor with the process as the queue's fair
	// key (max-min among the askers).
	pool, demand := max(0, w.cap-w.sumHas), 0.0
	if w.k < w.learn {
		pool = 0 // after a loss of the state, grants are held back for one lease (the quarantine)
	}
	m := w.m
	m.wants = m.wants[:0]
	for i := range w.procs {
		if p := &w.procs[i]; p.running(w.k) {
			if r := w.residual(p); r > 0 {
				demand += r
				m.wants = append(m.wants, r)
			}
		}
	}
	share := func(r float64) float64 { return r * min(1, pool/demand) }
	if w.pol == governorFair {
		level := waterLevel(m.wants, pool)
		share = func(r float64) float64 { return min(r, level) }
	}
	decay := math.Exp(-dt / w.cfg.CallMean.Seconds())
	w.m.fairShares(w)
	inUse, grants := 0.0, 0.0
	waiting := 0
	for i := range w.procs {
		p := &w.procs[i]
		if !p.running(w.k) {
			continue
		}
		w.m.want(w, i, p.lambda*dt)
		var got float64 // requests served this tick
		if w.pooled(p) && p.share == 0 {
			want := share(w.wantOf(p))
			if w.kind == concurrency {
				p.inUse = want
				got = want / w.cfg.CallMean.Seconds() * dt
				w.m.calls(w, 2*got) // acquire and release
			} else {
				got = want * dt
				w.m.calls(w, got)
			}
			if want > 0 {
				w.m.granted(w, p)
			}
		} else {
			// governor: beyond its whole slots, per grant from the pool.
			extra := share(w.residual(p))
			if extra > 0 {
				n := extra / w.cfg.CallMean.Seconds() * dt
				w.m.calls(w, 2*n)
				got += n
				inUse += extra
			}
			if w.k >= p.leaseEnd { // its capacity lease ended on its own clock
				p.share, p.tokens = 0, 0
			}
			if w.kind == concurrency {
				target := min(w.wantOf(p), p.share)
				if p.inUse < target {
					p.inUse = target
				} else {
					p.inUse = max(target, p.inUse*decay)
				}
				got += p.inUse / w.cfg.CallMean.Seconds() * dt
				if p.share >= 1 || extra > 0 {
					w.m.granted(w, p)
				}
				// governor: a shrink's calls have ended; say so at once
				// when others wait, so the slots move now.
				if w.pol == governorFair && p.has-max(p.share, p.inUse) >= 1 && w.m.waiting > 0 {
					w.m.call(w)
					held := max(p.share, p.inUse)
					w.sumHas -= p.has - held
					p.has = held
				}
			} else {
				p.tokens = min(p.tokens+p.share*dt, p.share*w.cfg.BurstSeconds)
				got = min(p.lambda*dt, p.tokens)
				p.tokens -= got
				if got > 0 {
					w.m.granted(w, p)
				}
			}
			if w.wantOf(p) > p.share+1e-9 {
				waiting++
			}
		}
		w.m.serve(w, i, got)
		inUse += p.inUse
		grants += got
	}
	w.m.waiting = waiting
	w.m.tick(w, inUse, grants)
}

// metrics are what the simulation reports; the heavy half of the run
// (demand above the limit) is where utilisation, fairness and a
// newcomer's wait are measured; calls are counted in both halves.
type metrics struct {
	callsLight, callsHeavy float64
	waits                  []float64 // a newcomer's wait, seconds (heavy half)
	never                  int       // heavy-half spells that ended before their first grant
	usedSum                float64   // slots in use, or requests/s, summed over heavy ticks
	heavyTicks             int
	overshoot              float64 // concurrency: slots in use above the limit, at most
	window                 []float64
	windowSum, maxWindow   float64 // rate: the most requests in any window of one minute
	waiting                int
	wanted, served, fair   []float64 // per process, heavy half: requests wanted, served, and its max-min fair share
	wants                  []float64
}

// fairShares adds each running process's max-min fair share of this
// tick (the water level over every running want) to its account: the
// reference Jain's index is computed against.
func (m *metrics) fairShares(w *world) {
	if !w.heavy() {
		return
	}
	m.wants = m.wants[:0]
	for i := range w.procs {
		if p := &w.procs[i]; p.running(w.k) && p.lambda > 0 {
			m.wants = append(m.wants, w.wantOf(p))
		}
	}
	level := waterLevel(m.wants, w.cap)
	perRequest := 1.0
	if w.kind == concurrency {
		perRequest = w.cfg.CallMean.Seconds()
	}
	for i := range w.procs {
		if p := &w.procs[i]; p.running(w.k) && p.lambda > 0 {
			m.fair[i] += min(w.wantOf(p), level) / perRequest * w.dt()
		}
	}
}

func newMetrics(w *world) *metrics {
	return &metrics{
		window: make([]float64, int(60/w.dt())),
		wanted: make([]float64, len(w.procs)), served: make([]float64, len(w.procs)), fair: make([]float64, len(w.procs)),
	}
}

func (m *metrics) call(w *world) { m.calls(w, 1) }

func (m *metrics) calls(w *world, n float64) {
	if w.heavy() {
		m.callsHeavy += n
	} else {
		m.callsLight += n
	}
}

func (m *metrics) granted(w *world, p *proc) {
	if p.busyAt >= 0 {
		if w.heavy() && p.busyAt*2 >= w.totalTicks() {
			m.waits = append(m.waits, float64(w.k-p.busyAt)*w.dt())
		}
		p.busyAt = -1
	}
}

// spellEnded counts a spell that ended before its first grant.
func (m *metrics) spellEnded(w *world, p *proc) {
	if p.busyAt >= 0 && w.heavy() && p.busyAt*2 >= w.totalTicks() {
		m.never++
	}
}

func (m *metrics) want(w *world, i int, n float64) {
	if w.heavy() {
		m.wanted[i] += n
	}
}

func (m *metrics) serve(w *world, i int, n float64) {
	if w.heavy() {
		m.served[i] += n
	}
}

func (m *metrics) tick(w *world, inUse, grants float64) {
	if w.kind == concurrency {
		m.overshoot = max(m.overshoot, inUse-w.cap)
	}
	slot := w.k % len(m.window)
	m.windowSum += grants - m.window[slot]
	m.window[slot] = grants
	m.maxWindow = max(m.maxWindow, m.windowSum)
	if w.heavy() {
		m.heavyTicks++
		if w.kind == concurrency {
			m.usedSum += inUse
		} else {
			m.usedSum += grants / w.dt()
		}
	}
}

// result is one row of the report.
type result struct {
	Policy                    policy
	Kind                      kind
	CallsLight, CallsHeavy    float64 // backend calls per second
	CallsPerGrant             float64 // heavy half
	Utilisation               float64 // of the limit, heavy half
	Jain                      float64 // over what each process was served against its max-min fair share
	WaitP50, WaitP99, WaitMax float64
	Never                     float64 // the fraction of newcomers never granted in their spell
	Overshoot                 float64 // slots above the limit; or requests above the limit in a minute
	MaxMinute                 float64 // rate: the most requests in any minute, over the limit
}

func (m *metrics) result(w *world) result {
	half := w.cfg.Duration.Seconds() / 2
	r := result{Policy: w.pol, Kind: w.kind, CallsLight: m.callsLight / half, CallsHeavy: m.callsHeavy / half}
	r.Utilisation = m.usedSum / float64(m.heavyTicks) / w.cap
	grants := 0.0
	for _, s := range m.served {
		grants += s
	}
	if grants > 0 {
		r.CallsPerGrant = m.callsHeavy / grants
	}
	var sx, sxx float64
	n := 0
	for i, fair := range m.fair {
		if fair > 0 {
			x := min(1, m.served[i]/fair)
			sx += x
			sxx += x * x
			n++
		}
	}
	if n > 0 && sxx > 0 {
		r.Jain = sx * sx / (float64(n) * sxx)
	}
	if n := len(m.waits) + m.never; n > 0 {
		r.Never = float64(m.never) / float64(n)
	}
	if len(m.waits) > 0 {
		slices.Sort(m.waits)
		q := func(f float64) float64 { return m.waits[int(f*float64(len(m.waits)-1))] }
		r.WaitP50, r.WaitP99, r.WaitMax = q(0.5), q(0.99), q(1)
	}
	r.Overshoot = m.overshoot
	if w.kind == rate {
		r.MaxMinute = m.maxWindow / w.cfg.RPM
		bound := w.cfg.RPM + w.cap*w.cfg.BurstSeconds // the central limiter's own: its burst and a minute's rate
		r.Overshoot = max(0, m.maxWindow-bound)
	}
	return r
}
