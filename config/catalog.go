package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/governor-dev/governor/governor"
)

// Catalog is what the configuration says of resources, for the tool: a
// limit and where it was set, a queue policy, a mkdir lock, a provider's
// limits. Built once by (*Loaded).Catalog; read-only after.
type Catalog struct {
	resources map[string]ResourceDef
	providers map[string]ProviderDef
	limits    map[string]int
	// LockOrder is lock_order: resource-name prefixes, in acquisition
	// order (governor.Options.LockOrder).
	LockOrder []string
}

// ResourceDef is one configured resource.
type ResourceDef struct {
	Name      string
	Limit     int             // 0: none configured (a provider with rates only)
	Origin    string          // "resources.heavy.limit in FILE:LINE" ("" when none)
	Policy    governor.Policy // zero: FIFO
	MkdirLock string          // directory holding slot.d ("" none)
	MkdirNote string          // said before the slot is taken (Config.MkdirLockNotes)
	Provider  *ProviderDef    // for provider:NAME resources (nil otherwise)
}

// ProviderDef is one configured provider: its limits for the library's
// governor.Provider, and its request and token budgets.
type ProviderDef struct {
	Name             string
	Limits           governor.ProviderLimits
	Requests, Tokens governor.RateLimit
	Shadow           bool // the budgets are evaluated and counted, never enforced
}

// RateLimited reports whether p has a request or token budget.
func (p ProviderDef) RateLimited() bool { return p.Requests.Rate > 0 || p.Tokens.Rate > 0 }

// Catalog returns the catalog of l's configuration: every resource of
// Config.Limits with its origin (LimitOrigins), policy and mkdir lock,
// and provider:NAME for every configured provider, with or without a
// max_concurrency.
func (l *Loaded) Catalog() *Catalog {
	c := l.Config
	cat := &Catalog{resources: map[string]ResourceDef{}, providers: map[string]ProviderDef{}, limits: c.Limits(), LockOrder: slices.Clone(c.LockOrder)}
	origins := l.LimitOrigins()
	policies, notes := c.Policies(), c.MkdirLockNotes()
	for name, limit := range cat.limits {
		cat.resources[name] = ResourceDef{Name: name, Limit: limit, Origin: origins[name], Policy: policies[name], MkdirLock: c.Resources[name].MkdirLock, MkdirNote: notes[name]}
	}
	for name, p := range c.Providers {
		pl := p.ProviderLimits()
		def := ProviderDef{Name: name, Limits: pl, Requests: pl.Requests, Tokens: pl.Tokens, Shadow: pl.Shadow}
		cat.providers[name] = def
		r := cat.resources[ProviderResourcePrefix+name]
		r.Name, r.Provider = ProviderResourcePrefix+name, &def
		cat.resources[r.Name] = r
	}
	return cat
}

// Resource returns the configured resource name, and whether the
// configuration has it.
func (c *Catalog) Resource(name string) (ResourceDef, bool) {
	r, ok := c.resources[name]
	return r, ok
}

// Provider returns the configured provider name (without "provider:"),
// and whether the configuration has it.
func (c *Catalog) Provider(name string) (ProviderDef, bool) {
	p, ok := c.providers[name]
	return p, ok
}

// Providers returns the names of the configured providers, sorted.
func (c *Catalog) Providers() []string { return sortedKeys(c.providers) }

// Resources returns the names of the configured resources, sorted.
func (c *Catalog) Resources() []string { return sortedKeys(c.resources) }

// Limits returns the configured limit of every resource that has one,
// by name (Config.Limits).
func (c *Catalog) Limits() map[string]int { return maps.Clone(c.limits) }

// Unconfigured says why a resource whose name the configuration reserves
// (run:join, provider:NAME) is not defined by it now — its stored limit
// is only the one last asked for, stale — or "" when it is defined, or
// its name is not reserved.
func (c *Catalog) Unconfigured(name string) string {
	if _, ok := c.resources[name]; ok {
		return ""
	}
	switch {
	case name == RunJoinResource:
		return "run.max_concurrent_runs is 1: no run joins"
	case strings.HasPrefix(name, ProviderResourcePrefix):
		return fmt.Sprintf("providers.%s is not configured", strings.TrimPrefix(name, ProviderResourcePrefix))
	}
	return ""
}
