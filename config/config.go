package config

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/leasetiming"
	"github.com/governor-dev/governor/governor/naming"
)

// Defaults for keys no source sets. The lease's are governor's: the
// rules live there (see leasetiming.Timing).
const (
	DefaultProject        = governor.DefaultName
	DefaultBackend        = BackendAuto
	DefaultLeaseTTL       = leasetiming.DefaultTTL
	DefaultLeaseHeartbeat = leasetiming.DefaultHeartbeat // capped at lease.ttl/3: leasetiming.HeartbeatFor
	DefaultFileName       = "exec-defaults.yaml"
	// DefaultMaxConcurrentRuns is run.max_concurrent_runs when no source
	// sets it: the run lock and three join slots.
	DefaultMaxConcurrentRuns = 4
)

// Backends.
const (
	BackendAuto  = "auto"  // redis when a Redis URL is configured, else file
	BackendFile  = "file"  // the embedded single-machine backend
	BackendRedis = "redis" // the distributed backend
)

// Resource names derived from the configuration.
const (
	RunResource            = "run"                           // the run lock: limit 1
	RunJoinResource        = "run:join"                      // join slots: run.max_concurrent_runs - 1
	ProviderResourcePrefix = governor.ProviderResourcePrefix // providers.<name>.max_concurrency
)

// The with-heavy-lock wrapper's variables (package mkdirslot has the
// same names: a test pins them): HEAVY_LOCK_DIR moves every mkdir_lock,
// HEAVY_LOCK_HELD says an ancestor holds the slot.
const (
	EnvHeavyLockDir  = "HEAVY_LOCK_DIR"
	EnvHeavyLockHeld = "HEAVY_LOCK_HELD"
)

// Bounds on values, decided in package governor.
const (
	MaxLimit       = governor.MaxLimit // largest slot limit
	MaxNameBytes   = naming.MaxNameLen // longest resource name, "provider:" prefix included
	MaxProjectName = naming.MaxProject // longest project name
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
	// Budgets are the spend budgets by name; Prices the price table, by
	// provider or PROVIDER/MODEL (docs/budgets.md).
	Budgets map[string]Budget `mapstructure:"budgets"`
	Prices  map[string]Price  `mapstructure:"prices"`

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
	// MaxConcurrentRuns is how many exec runs of the project may run at
	// once: the one holding the run lock (resource "run", limit 1) and
	// MaxConcurrentRuns-1 joiners on resource "run:join" (none when it is
	// 1). Load sets DefaultMaxConcurrentRuns when no source does; nil (a
	// hand-built Config) means that default too.
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
	// Adaptive makes max_concurrency the maximum of an adaptive limit
	// (governor.Adaptive): halved on each rate-limit signal, down to
	// AdaptiveMin (0: 1), one more after AdaptiveIncreaseEvery successes
	// in a row (0: governor.DefaultIncreaseEvery), over every process.
	Adaptive              bool `mapstructure:"adaptive"`
	AdaptiveMin           int  `mapstructure:"adaptive_min"`
	AdaptiveIncreaseEvery int  `mapstructure:"adaptive_increase_every"`
	// OnBackendDown is the degraded-mode policy of the library's
	// Provider.Do (governor.ParseBackendDown): closed (""), open, local:N.
	OnBackendDown string `mapstructure:"on_backend_down"`
	// Shadow evaluates requests_per_minute and tokens_per_minute without
	// enforcing them: nothing waits for them, and what they would have
	// held is counted (governor_shadow_denied_total).
	Shadow bool `mapstructure:"shadow"`
	// The queue policy of provider:<name> (needs max_concurrency).
	QueueKeys `mapstructure:",squash"`
	// Capacity leases of provider:<name> (needs max_concurrency).
	CapacityKeys `mapstructure:",squash"`
}

// ProviderLimits are the limits of provider p for the library's
// governor.Provider: its max concurrency (0 when it has none), rates and
// adaptive concurrency.
func (p Provider) ProviderLimits() governor.ProviderLimits {
	l := governor.ProviderLimits{
		Requests: governor.RateLimit{Rate: int64(p.RequestsPerMinute), Period: time.Minute, Burst: int64(p.Burst)},
		Tokens:   governor.RateLimit{Rate: int64(p.TokensPerMinute), Period: time.Minute},
		Shadow:   p.Shadow,
	}
	if p.MaxConcurrency != nil {
		l.MaxConcurrency = *p.MaxConcurrency
	}
	if p.Adaptive {
		l.Adaptive = &governor.Adaptive{Min: p.AdaptiveMin, IncreaseEvery: p.AdaptiveIncreaseEvery}
	}
	// A bad value never gets here: Load refuses it (validate).
	l.OnBackendDown, _ = governor.ParseBackendDown(p.OnBackendDown)
	return l
}

// Resource configures any other named slot set.
type Resource struct {
	Limit int `mapstructure:"limit"`
	// MkdirLock binds the resource to the one slot that the shell wrapper
	// with-heavy-lock takes with mkdir DIR/slot.d (package mkdirslot):
	// holding the resource then also holds that slot. An absolute path
	// after Load; $HEAVY_LOCK_DIR, when set, overrides it. "" means none.
	MkdirLock string `mapstructure:"mkdir_lock"`

	QueueKeys    `mapstructure:",squash"`
	CapacityKeys `mapstructure:",squash"`
}

// QueueKeys are the keys of a queue policy (governor.Policy;
// docs/queue-policies.md), under resources.NAME and, for provider:NAME,
// under providers.NAME: every process on the resource must configure the
// same. Priorities lists the classes, highest first; Reserve and Cap give
// slots per class as CLASS=N; FairWeights weighs fair keys as KEY=W; Fair
// turns fairness on without weights. Policy is fifo (the default) or
// eager.
type QueueKeys struct {
	Priorities   []string      `mapstructure:"priorities"`
	Reserve      []string      `mapstructure:"reserve"`
	Cap          []string      `mapstructure:"cap"`
	MaxOvertakes int           `mapstructure:"max_overtakes"`
	Fair         bool          `mapstructure:"fair"`
	FairWeights  []string      `mapstructure:"fair_weights"`
	FairCap      int           `mapstructure:"fair_cap"`
	MaxQueue     int           `mapstructure:"max_queue"`
	MaxWait      time.Duration `mapstructure:"max_wait"`
	Policy       string        `mapstructure:"policy"`
}

// QueuePolicy returns the queue policy the keys give, or an error naming
// the key and value that do not read (the rules are governor's:
// Validate also checks the policy against the limit).
func (r QueueKeys) QueuePolicy() (governor.Policy, error) {
	p := governor.Policy{MaxOvertakes: r.MaxOvertakes, Fair: r.Fair, FairCap: r.FairCap, MaxQueue: r.MaxQueue, MaxWait: r.MaxWait}
	switch r.Policy {
	case "", "fifo":
	case "eager":
		p.Eager = true
	default:
		return p, fmt.Errorf("policy %q; allowed: fifo, eager", r.Policy)
	}
	for _, name := range r.Priorities {
		p.Classes = append(p.Classes, governor.Class{Name: name})
	}
	set := func(key string, pairs []string, apply func(name string, n int) bool) error {
		for _, kv := range pairs {
			name, v, ok := strings.Cut(kv, "=")
			n, err := strconv.Atoi(v)
			if !ok || err != nil || !apply(name, n) {
				return fmt.Errorf("%s %q; allowed: NAME=N items (N a whole number), NAME a class of priorities for reserve and cap", key, kv)
			}
		}
		return nil
	}
	// perClass sets field of the class named, if p has it.
	perClass := func(field func(*governor.Class) *int) func(name string, n int) bool {
		return func(name string, n int) bool {
			for i := range p.Classes {
				if p.Classes[i].Name == name {
					*field(&p.Classes[i]) = n
					return true
				}
			}
			return false
		}
	}
	if err := set("reserve", r.Reserve, perClass(func(c *governor.Class) *int { return &c.Reserve })); err != nil {
		return p, err
	}
	if err := set("cap", r.Cap, perClass(func(c *governor.Class) *int { return &c.Cap })); err != nil {
		return p, err
	}
	if err := set("fair_weights", r.FairWeights, func(name string, n int) bool {
		if p.FairWeights == nil {
			p.FairWeights = map[string]int{}
		}
		p.FairWeights[name] = n
		return true
	}); err != nil {
		return p, err
	}
	return p, nil
}

// Policies returns the queue policy of every resource that configures
// one (see QueueKeys.QueuePolicy), by resource name, provider:NAME's
// under providers.NAME; a policy that does not read is left out
// (Validate reports it).
func (c Config) Policies() map[string]governor.Policy {
	out := map[string]governor.Policy{}
	add := func(name string, k QueueKeys) {
		if p, err := k.QueuePolicy(); err == nil && !p.IsZero() {
			out[name] = p
		}
	}
	for name, p := range c.Providers {
		add(ProviderResourcePrefix+name, p.QueueKeys)
	}
	for name, r := range c.Resources {
		add(name, r.QueueKeys)
	}
	return out
}

// Limits returns the slot limit of every resource the configuration
// defines, by resource name: "run" (1) and "run:join"
// (run.max_concurrent_runs - 1, absent when that is 1),
// "provider:<name>" for providers with a max_concurrency, and each name
// under resources. It does not validate; on a Config that Validate
// accepts no two entries share a name.
func (c Config) Limits() map[string]int {
	limits := make(map[string]int, 2+len(c.Providers)+len(c.Resources))
	limits[RunResource] = 1
	if n := c.maxRuns(); n > 1 {
		limits[RunJoinResource] = n - 1
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

// MkdirLocks returns the directory of each resource bound to a mkdir
// slot (resources.<name>.mkdir_lock), by resource name.
func (c Config) MkdirLocks() map[string]string {
	out := map[string]string{}
	for name, r := range c.Resources {
		if r.MkdirLock != "" {
			out[name] = r.MkdirLock
		}
	}
	return out
}

// maxRuns is run.max_concurrent_runs, its default when unset.
func (c Config) maxRuns() int {
	if c.Run.MaxConcurrentRuns == nil {
		return DefaultMaxConcurrentRuns
	}
	return *c.Run.MaxConcurrentRuns
}

// Timing returns the lease timing the configuration sets, for
// governor.Options: the TTL, the heartbeat unless it is Load's default
// (zero: governor derives the same value, and derives one for a lease
// with its own TTL too), and the safety margin left to governor's rule.
// Validate checks it by the same rule.
func (c Config) Timing() leasetiming.Timing {
	t := leasetiming.Timing{TTL: c.Lease.TTL, Heartbeat: c.Lease.Heartbeat}
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

// StoreFlag is one global flag of a command to paste elsewhere: --Name
// Value, or, when Env is set, --Name "$Env" (the value came from that
// environment variable, and may hold a secret).
type StoreFlag struct {
	Name, Value, Env string
}

// StoreFlags are the global flags that select the store this
// configuration selects, for a command to be pasted elsewhere (the
// takeover hint of a refusal): --config with the file read, --backend
// when it was set by a flag or the environment, and the backend's
// location — the file backend's absolute --dir, or the Redis URL when a
// flag or the environment set it (from GOVERNOR_REDIS_URL: a reference
// to the variable; from a flag: with its password redacted, to be filled
// in; from the file: --config carries it). The project is not among
// them: the refusal names the resource's own.
func (l *Loaded) StoreFlags() []StoreFlag {
	var out []StoreFlag
	if l.File != "" {
		out = append(out, StoreFlag{Name: "config", Value: l.File})
	}
	c := l.Config
	if src := l.Sources["backend"]; src == SourceEnv || src == SourceFlag {
		out = append(out, StoreFlag{Name: "backend", Value: c.ResolvedBackend()})
	}
	if c.ResolvedBackend() == BackendRedis {
		switch l.Sources["redis.url"] {
		case SourceEnv:
			env := EnvPrefix + "REDIS_URL"
			if c.origin != nil && c.origin.settings["redis.url"] != nil {
				env = strings.TrimPrefix(c.origin.settings["redis.url"].origin, "env ")
			}
			out = append(out, StoreFlag{Name: "redis-url", Env: env})
		case SourceFlag:
			out = append(out, StoreFlag{Name: "redis-url", Value: RedactURL(c.RedisURL())})
		}
		return out
	}
	if dir, err := filepath.Abs(c.File.Dir); err == nil && c.File.Dir != "" {
		out = append(out, StoreFlag{Name: "dir", Value: dir})
	}
	return out
}
