// Command capacity simulates capacity leases for one hot resource across
// a fleet, deterministically from a seed, and prints a table of what
// each way of sharing the resource costs and gives: governor's fair share
// with hand-off, Doorman's ProportionalShare and FairShare as its docs
// describe them, and today's central grants with no leases.
//
//	go run ./bench/capacity                 # 10,000 processes on 100 machines, 20 simulated minutes
//	go run ./bench/capacity -procs 1000 -duration 10m -seed 7
//
// docs/capacity.md explains the model and reads the table.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	cfg := defaultConfig()
	flag.IntVar(&cfg.Procs, "procs", cfg.Procs, "processes in the fleet")
	flag.IntVar(&cfg.Machines, "machines", cfg.Machines, "machines the processes run on")
	flag.DurationVar(&cfg.Duration, "duration", cfg.Duration, "simulated time: the first half light, the second heavy")
	flag.DurationVar(&cfg.Refresh, "refresh", cfg.Refresh, "a capacity lease's refresh interval")
	flag.DurationVar(&cfg.Lease, "lease", cfg.Lease, "a capacity lease's length")
	flag.IntVar(&cfg.Slots, "slots", cfg.Slots, "the concurrency limit")
	flag.Float64Var(&cfg.RPM, "rpm", cfg.RPM, "the rate limit, requests per minute")
	flag.Float64Var(&cfg.MinRate, "min-rate", cfg.MinRate, "a busy process's requests/s, at least (drawn log-uniformly per busy spell)")
	flag.Float64Var(&cfg.MaxRate, "max-rate", cfg.MaxRate, "a busy process's requests/s, at most")
	flag.Float64Var(&cfg.LightFactor, "light", cfg.LightFactor, "the demand's factor in the run's first half")
	flag.Float64Var(&cfg.HeavyFactor, "heavy", cfg.HeavyFactor, "the demand's factor in the run's second half")
	flag.DurationVar(&cfg.BusyMean, "busy", cfg.BusyMean, "a busy spell's mean length")
	flag.DurationVar(&cfg.IdleMean, "idle", cfg.IdleMean, "an idle spell's mean length")
	flag.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "the random seed: the same seed gives the same table")
	flag.BoolVar(&cfg.Faults, "faults", cfg.Faults, "kill a machine, stop another past its leases, lose the allocator's state")
	flag.Parse()
	if err := cfg.validate(); err != nil {
		fmt.Fprintln(os.Stderr, "capacity:", err)
		os.Exit(2)
	}
	report(os.Stdout, cfg, simulate(cfg))
}

func (c config) validate() error {
	switch {
	case c.Procs < 1 || c.Machines < 1 || c.Machines > c.Procs:
		return fmt.Errorf("-procs %d -machines %d: need at least one process and one machine, and no more machines than processes", c.Procs, c.Machines)
	case c.Refresh < c.Tick || c.Lease < c.Refresh:
		return fmt.Errorf("-refresh %v -lease %v: need %v <= refresh <= lease", c.Refresh, c.Lease, c.Tick)
	case c.Duration < 2*c.Lease:
		return fmt.Errorf("-duration %v: need at least two leases (%v)", c.Duration, 2*c.Lease)
	case c.Slots < 1 || c.RPM <= 0:
		return fmt.Errorf("-slots %d -rpm %v: both must be positive", c.Slots, c.RPM)
	case c.MinRate <= 0 || c.MaxRate < c.MinRate:
		return fmt.Errorf("-min-rate %v -max-rate %v: need 0 < min <= max", c.MinRate, c.MaxRate)
	case c.LightFactor <= 0 || c.HeavyFactor <= 0:
		return fmt.Errorf("-light %v -heavy %v: both must be positive", c.LightFactor, c.HeavyFactor)
	case c.BusyMean < c.Tick || c.IdleMean < c.Tick:
		return fmt.Errorf("-busy %v -idle %v: each at least %v", c.BusyMean, c.IdleMean, c.Tick)
	}
	return nil
}

// simulate runs every policy on both kinds of limit.
func simulate(cfg config) []result {
	var rs []result
	for _, k := range []kind{concurrency, rate} {
		for _, pol := range policies {
			w := newWorld(cfg, pol, k)
			rs = append(rs, w.run().result(w))
		}
	}
	return rs
}

func report(out io.Writer, cfg config, rs []result) {
	fmt.Fprintf(out, "%d processes on %d machines, %v simulated (light, then heavy), refresh %v, lease %v, seed %d\n",
		cfg.Procs, cfg.Machines, cfg.Duration, cfg.Refresh, cfg.Lease, cfg.Seed)
	fmt.Fprintf(out, "limits: %d concurrent, %.0f requests/minute (burst %gs)\n\n", cfg.Slots, cfg.RPM, cfg.BurstSeconds)
	fmt.Fprintln(out, "| limit | policy | backend calls/s light | heavy | calls per grant (heavy) | utilisation (heavy) | Jain | newcomer wait p50 / p99 / max | never granted | overshoot |")
	fmt.Fprintln(out, "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |")
	for _, r := range rs {
		over := fmt.Sprintf("%.2f slots", r.Overshoot)
		if r.Kind == rate {
			over = fmt.Sprintf("%.0f (busiest minute %.3f× the limit)", r.Overshoot, r.MaxMinute)
		}
		fmt.Fprintf(out, "| %s | %s | %.0f | %.0f | %.4f | %.1f%% | %.3f | %.2f / %.2f / %.2f s | %.1f%% | %s |\n",
			r.Kind, r.Policy, r.CallsLight, r.CallsHeavy, r.CallsPerGrant, 100*r.Utilisation, r.Jain, r.WaitP50, r.WaitP99, r.WaitMax, 100*r.Never, over)
	}
}
