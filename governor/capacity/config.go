package capacity

import (
	"fmt"
	"time"
)

// The defaults of a capacity lease's intervals, chosen with the fleet
// simulation (docs/capacity.md, "Choosing the defaults").
const (
	DefaultLease   = 30 * time.Second
	DefaultRefresh = 5 * time.Second
)

// Config turns capacity leases on for one resource of a Governor
// (governor.Options.Capacity): its concurrency slots are then granted
// from the process's share, with no round trip per grant.
type Config struct {
	// Lease is the capacity lease's length (0: DefaultLease), Refresh
	// how often it is refreshed (0: DefaultRefresh). A grant's local
	// deadline falls a tenth of Lease before the lease ends, so Refresh
	// must be shorter than nine tenths of Lease.
	Lease, Refresh time.Duration
}

// WithDefaults is c with DefaultLease and DefaultRefresh where it has 0.
func (c Config) WithDefaults() Config {
	if c.Lease == 0 {
		c.Lease = DefaultLease
	}
	if c.Refresh == 0 {
		c.Refresh = DefaultRefresh
	}
	return c
}

// Margin is how much sooner than Lease a grant's local deadline falls:
// a tenth of it.
func (c Config) Margin() time.Duration { return c.Lease / 10 }

// Validate checks c (with its defaults applied: see WithDefaults): the
// error names the bad value and what is allowed.
func (c Config) Validate() error {
	switch {
	case c.Lease < time.Second:
		return fmt.Errorf("capacity lease %v; allowed: 1s or more", c.Lease)
	case c.Refresh <= 0 || c.Refresh >= c.Lease-c.Margin():
		return fmt.Errorf("capacity refresh %v with lease %v; allowed: more than 0 and less than %v (the lease less a tenth)",
			c.Refresh, c.Lease, c.Lease-c.Margin())
	}
	return nil
}
