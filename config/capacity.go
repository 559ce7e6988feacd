package config

import (
	"fmt"
	"time"

	"github.com/governor-dev/governor/governor/capacity"
)

// CapacityKeys turn capacity leases on for a resource (docs/capacity.md),
// under resources.NAME and, for provider:NAME, under providers.NAME:
// a process that serves many calls (the bridge of a Python or
// TypeScript client) then grants the resource's slots from its share of
// the limit, with no round trip per grant. Flat keys, as adaptive's: a
// provider's name may hold dots.
type CapacityKeys struct {
	// Capacity turns it on.
	Capacity bool `mapstructure:"capacity"`
	// CapacityLease is the capacity lease's length (absent:
	// capacity.DefaultLease), CapacityRefresh how often it is refreshed
	// (absent: capacity.DefaultRefresh); less than nine tenths of it.
	CapacityLease   time.Duration `mapstructure:"capacity_lease"`
	CapacityRefresh time.Duration `mapstructure:"capacity_refresh"`
}

// capacityKeys are CapacityKeys in the schema.
var capacityKeys = map[string]*schema{
	"capacity":         leaf(kindBool),
	"capacity_lease":   leaf(kindDuration),
	"capacity_refresh": leaf(kindDuration),
}

// CapacityConfig is what k turns on (with capacity's defaults), and
// whether it does.
func (k CapacityKeys) CapacityConfig() (capacity.Config, bool) {
	return capacity.Config{Lease: k.CapacityLease, Refresh: k.CapacityRefresh}.WithDefaults(), k.Capacity
}

// Capacity returns the capacity leases the configuration turns on, by
// resource name, for governor.Options.Capacity: provider:NAME's under
// providers.NAME. One Validate accepts gets no refused resource here.
func (c Config) Capacity() map[string]capacity.Config {
	out := map[string]capacity.Config{}
	for name, p := range c.Providers {
		if cc, ok := p.CapacityConfig(); ok {
			out[ProviderResourcePrefix+name] = cc
		}
	}
	for name, r := range c.Resources {
		if cc, ok := r.CapacityConfig(); ok {
			out[name] = cc
		}
	}
	return out
}

// capacityProblems checks the capacity keys: intervals that read, and
// capacity only on resources whose slots or requests a share may grant:
// never an exclusive one (limit 1), one with a queue policy or a mkdir
// slot, nor a provider with none of max_concurrency,
// requests_per_minute and tokens_per_minute. Exec runs (run, run:join) and spend budgets have
// no such keys: they stay exact and central.
func (c Config) capacityProblems() []*FieldError {
	o := c.origin
	var ps []*FieldError
	add := func(key, value, format string, args ...any) {
		ps = append(ps, o.errAt(key, value, fmt.Sprintf(format, args...)))
	}
	check := func(section, name string, k CapacityKeys, limit *int, rate, policy bool, mkdir string) {
		prefix := section + "." + name + "."
		if !k.Capacity {
			for _, f := range []struct {
				key string
				v   time.Duration
			}{{"capacity_lease", k.CapacityLease}, {"capacity_refresh", k.CapacityRefresh}} {
				if f.v != 0 || o != nil && !o.missing(prefix+f.key) {
					add(prefix+f.key, f.v.String(), "is set but %scapacity is not true; set capacity: true to lease this resource's capacity", prefix)
				}
			}
			return
		}
		why := ""
		switch {
		case limit == nil && !rate:
			why = "it has none of max_concurrency, requests_per_minute and tokens_per_minute: a share is of concurrency slots, requests or tokens per minute"
		case limit != nil && *limit == 1:
			why = "its limit is 1: an exclusive resource stays exact and central; use a limit of 2 or more"
		case policy:
			why = "it has a queue policy: a share would pass its classes and fair keys; remove the policy or the capacity"
		case mkdir != "":
			why = "it is bound to a mkdir slot (mkdir_lock): one slot of one machine"
		}
		if why != "" {
			add(prefix+"capacity", "true", "capacity is not allowed here: %s", why)
		}
		for _, f := range []struct {
			key string
			v   time.Duration
		}{{"capacity_lease", k.CapacityLease}, {"capacity_refresh", k.CapacityRefresh}} {
			if (f.v < 0 || f.v == 0 && o != nil && !o.missing(prefix+f.key)) && !o.isBroken(prefix+f.key) {
				add(prefix+f.key, f.v.String(), "%v is not allowed; a capacity interval must be more than 0 (absent: the default, lease %v, refresh %v)",
					f.v, capacity.DefaultLease, capacity.DefaultRefresh)
				return
			}
		}
		if cc, _ := k.CapacityConfig(); !o.isBroken(prefix+"capacity_lease", prefix+"capacity_refresh") {
			if err := cc.Validate(); err != nil {
				add(prefix+"capacity_refresh", cc.Refresh.String(), "%v", err)
			}
		}
	}
	for _, name := range sortedKeys(c.Providers) {
		p := c.Providers[name]
		q, _ := p.QueuePolicy()
		check("providers", name, p.CapacityKeys, p.MaxConcurrency, p.RequestsPerMinute > 0 || p.TokensPerMinute > 0, !q.IsZero(), "")
	}
	for _, name := range sortedKeys(c.Resources) {
		r := c.Resources[name]
		q, _ := r.QueuePolicy()
		check("resources", name, r.CapacityKeys, &r.Limit, false, !q.IsZero(), r.MkdirLock)
	}
	return ps
}
