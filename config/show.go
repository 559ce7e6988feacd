package config

import (
	"fmt"
	"strconv"
	"strings"
)

// Entry is one effective value, for `governor config show`.
type Entry struct {
	Key    string // dotted key
	Value  string // as it would be written in the file; Redis passwords redacted
	Source Source
}

// Show returns every effective value with its source, sorted by key. Keys
// no source sets and that have no default (run.max_concurrent_runs, a
// provider's unset rates) are left out.
func (l *Loaded) Show() []Entry {
	entries := make([]Entry, 0, len(l.Sources))
	for _, key := range sortedKeys(l.Sources) {
		entries = append(entries, Entry{Key: key, Value: l.Config.valueOf(splitKey(key)), Source: l.Sources[key]})
	}
	return entries
}

// valueOf formats the value at path.
func (c Config) valueOf(path []string) string {
	switch dotted(path) {
	case "project":
		return c.Project
	case "backend":
		return c.Backend
	case "redis.url":
		return RedactURL(c.Redis.URL)
	case "redis.allow_eviction":
		return strconv.FormatBool(c.Redis.AllowEviction)
	case "redis.loss_quarantine":
		return strconv.FormatBool(c.Redis.Quarantine())
	case "file.dir":
		return c.File.Dir
	case "lease.ttl":
		return c.Lease.TTL.String()
	case "lease.heartbeat":
		return c.Lease.Heartbeat.String()
	case "run.max_concurrent_runs":
		return formatIntPtr(c.Run.MaxConcurrentRuns)
	case "lock_order":
		return strings.Join(c.LockOrder, ",")
	}
	if len(path) != 3 {
		return ""
	}
	switch path[0] {
	case "providers":
		p := c.Providers[path[1]]
		switch path[2] {
		case "max_concurrency":
			return formatIntPtr(p.MaxConcurrency)
		case "requests_per_minute":
			return strconv.Itoa(p.RequestsPerMinute)
		case "tokens_per_minute":
			return strconv.Itoa(p.TokensPerMinute)
		case "burst":
			return strconv.Itoa(p.Burst)
		}
	case "resources":
		switch path[2] {
		case "limit":
			return strconv.Itoa(c.Resources[path[1]].Limit)
		case "mkdir_lock":
			return c.Resources[path[1]].MkdirLock
		default:
			return showPolicy(c.Resources[path[1]], path[2])
		}
	}
	return ""
}

func formatIntPtr(p *int) string {
	if p == nil {
		return ""
	}
	return strconv.Itoa(*p)
}

// LimitOrigins returns, for each resource of Config.Limits, the key that
// sets its limit and where its value came from, for messages:
// "resources.heavy.limit in /etc/exec-defaults.yaml:7",
// "run.max_concurrent_runs from env GOVERNOR_RUN_MAX_CONCURRENT_RUNS".
func (l *Loaded) LimitOrigins() map[string]string {
	out := map[string]string{}
	for resource := range l.Config.Limits() {
		key := "resources." + resource + ".limit"
		if resource == RunResource || resource == RunJoinResource {
			key = "run.max_concurrent_runs"
		} else if name, ok := strings.CutPrefix(resource, ProviderResourcePrefix); ok && l.Config.Providers[name].MaxConcurrency != nil {
			key = "providers." + name + ".max_concurrency"
		}
		out[resource] = key
		if o := l.Config.origin; o != nil {
			if s := o.settings[key]; s != nil {
				switch s.source {
				case SourceFile:
					out[resource] = fmt.Sprintf("%s in %s:%d", key, o.file, s.line)
				default:
					out[resource] = key + " from " + s.origin
				}
			}
		}
	}
	return out
}

// showPolicy shows field of r's queue policy.
func showPolicy(r Resource, field string) string {
	switch field {
	case "priorities":
		return strings.Join(r.Priorities, ",")
	case "reserve":
		return strings.Join(r.Reserve, ",")
	case "cap":
		return strings.Join(r.Cap, ",")
	case "fair_weights":
		return strings.Join(r.FairWeights, ",")
	case "max_overtakes":
		return strconv.Itoa(r.MaxOvertakes)
	case "fair":
		return strconv.FormatBool(r.Fair)
	case "fair_cap":
		return strconv.Itoa(r.FairCap)
	case "max_queue":
		return strconv.Itoa(r.MaxQueue)
	case "max_wait":
		return r.MaxWait.String()
	case "policy":
		return r.Policy
	}
	return ""
}
