package main

import (
	"math"
	"math/rand/v2"
	"time"
)

var inf = math.Inf(1)

// policy is how the fleet's processes get their grants.
type policy int

const (
	central             policy = iota // every grant a round trip to the resource's key (today)
	doormanProportional               // Doorman's ProportionalShare, refreshed by each client
	doormanFair                       // Doorman's FairShare (max-min), refreshed by each client
	governorFair                      // max-min, with hand-off to waiters, returns and confirmed shrinks
)

var policies = []policy{central, doormanProportional, doormanFair, governorFair}

func (p policy) String() string {
	return [...]string{"central (no leases)", "Doorman ProportionalShare", "Doorman FairShare", "governor (fair share)"}[p]
}

// kind is the resource's dimension: concurrency slots or requests per minute.
type kind int

const (
	concurrency kind = iota
	rate
)

func (k kind) String() string { return [...]string{"concurrency", "rate"}[k] }

// config is one simulated fleet. Demand: each process is busy or idle
// (exponential spells); a busy process wants requests at a rate drawn
// log-uniformly per spell, times the phase's factor (the first half of
// the run light, the second heavy). A request holds a slot for CallMean
// on average (Little's law turns a rate into slots wanted).
type config struct {
	Procs, Machines          int
	Duration, Tick           time.Duration
	Refresh, Lease, CallMean time.Duration
	Slots                    int     // the concurrency limit
	RPM                      float64 // the rate limit
	BurstSeconds             float64 // the rate limiter's burst, in seconds of rate
	BusyMean, IdleMean       time.Duration
	MinRate, MaxRate         float64 // a busy process's requests/s (before the factor)
	LightFactor, HeavyFactor float64
	Faults                   bool // kill a machine, stop a machine, lose the backend's state
	Seed                     uint64
}

func defaultConfig() config {
	return config{
		Procs: 10000, Machines: 100,
		Duration: 20 * time.Minute, Tick: 250 * time.Millisecond,
		Refresh: 5 * time.Second, Lease: 30 * time.Second, CallMean: 300 * time.Millisecond,
		Slots: 512, RPM: 100000, BurstSeconds: 1,
		BusyMean: 30 * time.Second, IdleMean: 570 * time.Second,
		MinRate: 0.05, MaxRate: 50,
		LightFactor: 0.3, HeavyFactor: 1,
		Faults: true, Seed: 1,
	}
}

// proc is one process: its own view (share, lease, what it uses) and the
// server's view of it (has, want, expiry).
type proc struct {
	lambda   float64 // requests/s it wants now; 0 while idle
	share    float64 // what it may grant locally (whole slots for concurrency)
	leaseEnd int     // the tick its capacity lease ends, on its own clock
	phase    int     // its refresh tick, modulo the interval
	inUse    float64 // concurrency: slots in use
	tokens   float64 // rate: its local bucket
	leased   bool    // governor: it holds a share (else it asks per grant)

	has, want float64
	expires   int

	dead         bool
	stoppedUntil int

	busyAt         int // the tick its spell began, until its first grant; -1 after
	wanted, served float64
}

func (p *proc) running(k int) bool { return !p.dead && k >= p.stoppedUntil }

// world runs one policy on one resource kind.
type world struct {
	cfg    config
	pol    policy
	kind   kind
	rng    *rand.Rand
	procs  []proc
	k      int     // the tick
	cap    float64 // slots, or requests/s
	sumHas float64
	learn  int // the allocator learns (grants no new capacity) until this tick

	level  float64 // fair share's water level
	prop   proportional
	m      *metrics
	ticks  struct{ refresh, lease int }
	factor float64
}

func newWorld(cfg config, pol policy, k kind) *world {
	w := &world{cfg: cfg, pol: pol, kind: k, rng: rand.New(rand.NewPCG(cfg.Seed, uint64(k))), procs: make([]proc, cfg.Procs)}
	w.ticks.refresh = int(cfg.Refresh / cfg.Tick)
	w.ticks.lease = int(cfg.Lease / cfg.Tick)
	w.cap = float64(cfg.Slots)
	if k == rate {
		w.cap = cfg.RPM / 60
	}
	for i := range w.procs {
		w.procs[i].phase = w.rng.IntN(w.ticks.refresh)
		w.procs[i].busyAt = -1
	}
	w.m = newMetrics(w)
	return w
}

// wantOf is what a process asks for: slots (its rate times the call's
// mean length) or requests/s.
func (w *world) wantOf(p *proc) float64 {
	if w.kind == concurrency {
		return p.lambda * w.cfg.CallMean.Seconds()
	}
	return p.lambda
}

func (w *world) dt() float64 { return w.cfg.Tick.Seconds() }

func (w *world) heavy() bool { return w.k*2 >= w.totalTicks() }

func (w *world) totalTicks() int { return int(w.cfg.Duration / w.cfg.Tick) }

func (w *world) run() *metrics {
	for w.k = 0; w.k < w.totalTicks(); w.k++ {
		w.factor = w.cfg.LightFactor
		if w.heavy() {
			w.factor = w.cfg.HeavyFactor
		}
		w.faults()
		w.demand()
		w.expire()
		if w.pol != central {
			w.allocate()
			w.refreshes()
			if w.pol == governorFair {
				w.handOff()
			}
		}
		w.use()
	}
	return w.m
}

// demand moves each running process between busy and idle spells.
func (w *world) demand() {
	dt := w.dt()
	pBusy, pIdle := dt/w.cfg.IdleMean.Seconds(), dt/w.cfg.BusyMean.Seconds()
	for i := range w.procs {
		p := &w.procs[i]
		if !p.running(w.k) {
			continue
		}
		switch {
		case p.lambda == 0 && w.rng.Float64() < pBusy:
			lo, hi := math.Log(w.cfg.MinRate), math.Log(w.cfg.MaxRate)
			p.lambda = w.factor * math.Exp(lo+w.rng.Float64()*(hi-lo))
			p.busyAt = w.k
			if w.pol != central {
				w.call(i) // a newcomer asks at once
			}
		case p.lambda > 0 && w.rng.Float64() < pIdle:
			w.m.spellEnded(w, p)
			p.lambda, p.busyAt = 0, -1
			// governor: a process that stops asking gives its share
			// back at once when others wait, else at its next refresh.
			if w.pol == governorFair && p.has > 0 && w.m.waiting > 0 {
				w.call(i)
			}
		}
	}
}

// expire ends, on the server, the leases nobody renewed.
func (w *world) expire() {
	for i := range w.procs {
		p := &w.procs[i]
		if p.expires <= w.k && (p.has > 0 || p.want > 0) {
			w.sumHas -= p.has
			p.has, p.want = 0, 0
		}
	}
}

// allocate computes the algorithm's aggregates from the server's view.
func (w *world) allocate() {
	wants := make([]float64, 0, 1024)
	clients := 0
	for i := range w.procs {
		p := &w.procs[i]
		want := p.want
		if w.pooled(p) && p.share == 0 {
			want = 0 // the server sees a pooled process's demand in its queue
			if p.running(w.k) {
				want = w.wantOf(p)
			}
		}
		if p.expires > w.k || want > 0 {
			clients++
		}
		if want > 0 {
			wants = append(wants, want)
		}
	}
	w.level = waterLevel(wants, w.cap)
	w.prop = newProportional(wants, clients, w.cap)
}

func (w *world) entitled(want float64) float64 {
	if w.pol == doormanProportional {
		return w.prop.entitled(want)
	}
	return min(want, w.level)
}

func (w *world) refreshes() {
	for i := range w.procs {
		p := &w.procs[i]
		if !p.running(w.k) || w.k%w.ticks.refresh != p.phase {
			continue
		}
		if p.has > 0 || p.share > 0 || p.lambda > 0 {
			w.call(i)
		}
	}
}
