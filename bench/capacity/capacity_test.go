package main

import (
	"bytes"
	"math"
	"strings"
	"sync"
	"testing"
	"time"
)

// smallRun is small()'s results, simulated once for the tests that read them.
var smallRun = sync.OnceValue(func() []result { return simulate(small()) })

// small is the default fleet scaled down twentyfold (processes, machines and
// both limits), so that each test runs in a moment.
func small() config {
	c := defaultConfig()
	c.Procs, c.Machines, c.Slots, c.RPM = 500, 5, 26, 5000
	c.Duration = 6 * time.Minute
	return c
}

func TestSameSeedSameTable(t *testing.T) {
	var a, b bytes.Buffer
	report(&a, small(), smallRun())
	report(&b, small(), simulate(small()))
	if a.String() != b.String() {
		t.Fatalf("two runs of one seed differ:\n%s\n%s", a.String(), b.String())
	}
	c := small()
	c.Seed = 2
	var d bytes.Buffer
	report(&d, c, simulate(c))
	if strings.SplitN(d.String(), "\n", 2)[1] == strings.SplitN(a.String(), "\n", 2)[1] {
		t.Fatal("another seed gave the same table")
	}
}

// Shares never sum above the limit, whatever the algorithm, with a
// machine killed, one stopped past its leases and the allocator's state
// lost: no slot above the limit at any tick, no minute above the
// limiter's own bound.
func TestNoOvershoot(t *testing.T) {
	for _, r := range smallRun() {
		if r.Overshoot > 1e-9 {
			t.Errorf("%s, %s: overshoot %v", r.Kind, r.Policy, r.Overshoot)
		}
		if r.Utilisation <= 0 {
			t.Errorf("%s, %s: nothing granted", r.Kind, r.Policy)
		}
	}
}

// governor's newcomer is granted within one refresh interval at
// saturation (no faults: a loss holds new shares back for one lease, by
// design), and governor uses at least 90% of the limit there while
// calling the backend less than a fifth as often as central grants for
// a rate.
func TestGovernorAtSaturation(t *testing.T) {
	c := small()
	c.Faults = false
	rs := simulate(c)
	for _, r := range rs {
		if r.Policy != governorFair {
			continue
		}
		if r.WaitMax > c.Refresh.Seconds() {
			t.Errorf("%s: a newcomer waited %vs, above one refresh (%v)", r.Kind, r.WaitMax, c.Refresh)
		}
		if r.Utilisation < 0.9 {
			t.Errorf("%s: utilisation %.3f under saturation", r.Kind, r.Utilisation)
		}
	}
	var centralCalls, governorCalls float64
	for _, r := range rs {
		if r.Kind == rate && r.Policy == central {
			centralCalls = r.CallsHeavy
		}
		if r.Kind == rate && r.Policy == governorFair {
			governorCalls = r.CallsHeavy
		}
	}
	if governorCalls*5 > centralCalls {
		t.Errorf("rate: governor %v calls/s against central %v", governorCalls, centralCalls)
	}
}

// Four processes with equal demand, above the limit, each get 25 ± 5%
// of the grants once two refresh intervals have passed.
func TestFourEqualProcessesShareEqually(t *testing.T) {
	for _, k := range []kind{concurrency, rate} {
		c := defaultConfig()
		c.Procs, c.Machines, c.Slots, c.RPM, c.Faults = 4, 1, 16, 1200, false
		c.Duration = 4 * c.Refresh
		c.MinRate, c.MaxRate = 100, 100 // each wants far more than a quarter
		c.LightFactor, c.HeavyFactor = 1, 1
		c.IdleMean, c.BusyMean = c.Tick, time.Hour // busy from the start, all along
		w := newWorld(c, governorFair, k)
		w.run() // the heavy half is the last two refresh intervals
		total := 0.0
		for _, s := range w.m.served {
			total += s
		}
		for i, s := range w.m.served {
			if f := s / total; math.Abs(f-0.25) > 0.05 {
				t.Errorf("%s: process %d got %.3f of the grants", k, i, f)
			}
		}
	}
}

func TestBadConfigRefused(t *testing.T) {
	for _, mod := range []func(*config){
		func(c *config) { c.Procs = 0 },
		func(c *config) { c.Machines = c.Procs + 1 },
		func(c *config) { c.Lease = c.Refresh / 2 },
		func(c *config) { c.Duration = c.Lease },
		func(c *config) { c.Slots = 0 },
	} {
		c := defaultConfig()
		mod(&c)
		if err := c.validate(); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}
