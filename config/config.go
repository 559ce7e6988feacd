package config

import (
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/runner"
)

// Defaults for keys no source sets. The lease's are governor's: the
// rules live there (see governor.LeaseTiming).
const (
	DefaultProject        = governor.DefaultName
	DefaultBackend        = BackendAuto
	DefaultLeaseTTL       = governor.DefaultTTL
	DefaultLeaseHeartbeat = governor.DefaultHeartbeat // capped at lease.ttl/3: governor.DefaultHeartbeatFor
	DefaultFileName       = "exec-defaults.yaml"
)

// Backends.
const (
	BackendAuto  = "auto"  // redis when a Redis URL is configured, else file
	BackendFile  = "file"  // the embedded single-machine backend
	BackendRedis = "redis" // the distributed backend
)

// Resource names derived from the configuration.
const (
	RunResource            = runner.DefaultResource          // run.max_concurrent_runs
	ProviderResourcePrefix = governor.ProviderResourcePrefix // providers.<name>.max_concurrency
)

// Bounds on values, decided in package governor.
const (
	MaxLimit       = governor.MaxLimit   // largest slot limit
	MaxNameBytes   = governor.MaxNameLen // longest resource name, "provider:" prefix included
	MaxProjectName = governor.MaxProject // longest project name
)

// Config is the effective configuration. Load fills it; a hand-built one is
// fine too, and Validate checks either.
type Config struct {
	Project   string              `mapstructure:"project"`
	Backend   string              `mapstructure:"backend"` // auto|file|redis
	Redis     Redis               `mapstructure:"redis"`
	File      File                `mapstructure:"file"`
	Lease     Lease               `mapstructure:"lease"`
	Run       Run                 `mapstructure:"run"`
	Providers map[string]Provider `mapstructure:"providers"`
	Resources map[string]Resource `mapstructure:"resources"`
	LockOrder []string            `mapstructure:"lock_order"` // resource-name prefixes, in acquisition order

	// origin says where each value came from, so that Validate can point
	// at the file line, variable or flag. Nil for a hand-built Config.
	origin *origin
}

// Redis configures the distributed backend.
type Redis struct {
	// URL is redis://[user:password@]host[:port][/db],
	// rediss://… (TLS), unix://[user:password@]/path/to/socket[?db=N],
	// redis+cluster://host:port[?addr=host:port…] (a Redis Cluster, seeds
	// in addr) or redis+sentinel://host:port[/db]?master_name=NAME
	// [&addr=host:port…] (the master that Sentinel names); rediss+cluster
	// and rediss+sentinel for TLS. Empty means no Redis.
	URL string `mapstructure:"url"`
	// AllowEviction lets governor run on a server whose maxmemory-policy
	// can evict its keys (redisbackend.AllowEviction). Default false.
	AllowEviction bool `mapstructure:"allow_eviction"`
	// LossQuarantine holds new grants on a resource whose Redis state was
	// lost for the longest lease TTL (redisbackend.LossQuarantine). Nil
	// (a hand-built Config) means the default, true: see Quarantine.
	LossQuarantine *bool `mapstructure:"loss_quarantine"`
}

// Quarantine tells whether the quarantine after lost Redis data is on.
func (r Redis) Quarantine() bool { return r.LossQuarantine == nil || *r.LossQuarantine }

// File configures the single-machine backend.
type File struct {
	Dir string `mapstructure:"dir"` // absolute after Load
}

// Lease configures lease expiry and renewal.
type Lease struct {
	TTL       time.Duration `mapstructure:"ttl"`
	Heartbeat time.Duration `mapstructure:"heartbeat"` // shorter than TTL
}

// Run configures the "run" resource.
type Run struct {
	// MaxConcurrentRuns is the limit of resource "run"; nil means no such
	// resource.
	MaxConcurrentRuns *int `mapstructure:"max_concurrent_runs"`
}

// Provider configures one LLM provider.
type Provider struct {
	// MaxConcurrency is the limit of resource "provider:<name>". Nil
	// (absent) means the provider has no concurrency resource: only its
	// rates apply.
	MaxConcurrency *int `mapstructure:"max_concurrency"`
	// Rates; 0 means no limit.
	RequestsPerMinute int `mapstructure:"requests_per_minute"`
	TokensPerMinute   int `mapstructure:"tokens_per_minute"`
	Burst             int `mapstructure:"burst"`
}

// Resource configures any other named slot set.
type Resource struct {
	Limit int `mapstructure:"limit"`
}

// Limits returns the slot limit of every resource the configuration
// defines, by resource name: "run", "provider:<name>" for providers with a
// max_concurrency, and each name under resources. It does not validate; on
// a Config that Validate accepts no two entries share a name.
func (c Config) Limits() map[string]int {
	limits := make(map[string]int, 1+len(c.Providers)+len(c.Resources))
	if c.Run.MaxConcurrentRuns != nil {
		limits[RunResource] = *c.Run.MaxConcurrentRuns
	}
	for name, p := range c.Providers {
		if p.MaxConcurrency != nil {
			limits[ProviderResourcePrefix+name] = *p.MaxConcurrency
		}
	}
	for name, r := range c.Resources {
		limits[name] = r.Limit
	}
	return limits
}

// Timing returns the lease timing the configuration sets, for
// governor.Options: the TTL, the heartbeat unless it is Load's default
// (zero: governor derives the same value, and derives one for a lease
// with its own TTL too), and the safety margin left to governor's rule.
// Validate checks it by the same rule.
func (c Config) Timing() governor.LeaseTiming {
	t := governor.LeaseTiming{TTL: c.Lease.TTL, Heartbeat: c.Lease.Heartbeat}
	if c.origin.missing("lease.heartbeat") {
		t.Heartbeat = 0
	}
	return t
}

// RedisURL returns the configured Redis URL, password included (it is for
// connecting; use RedactURL before printing it), or "" if none.
func (c Config) RedisURL() string { return c.Redis.URL }

// ResolvedBackend returns the backend to use: BackendRedis or BackendFile,
// resolving BackendAuto (and an empty Backend) by whether a Redis URL is
// set. An unknown Backend is returned as is; Validate reports it.
func (c Config) ResolvedBackend() string {
	switch c.Backend {
	case BackendAuto, "":
		if c.Redis.URL != "" {
			return BackendRedis
		}
		return BackendFile
	}
	return c.Backend
}
