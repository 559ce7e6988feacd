package config

import (
	"slices"
	"strings"

	"github.com/governor-dev/governor/internal/nearest"
)

// kind is the shape a key's value must have.
type kind int

const (
	kindString   kind = iota + 1
	kindInt           // a whole number
	kindDuration      // Go duration syntax: 30s, 1m30s
	kindList          // a list of strings
	kindBool          // true or false
	kindSection       // a mapping with the fixed keys in fields
	kindNamed         // a mapping from user-chosen names to entries shaped like entry
	kindAmount        // an amount in units, up to 6 decimals: 40, 12.50 (Amount)
)

type schema struct {
	kind   kind
	fields map[string]*schema // kindSection
	entry  *schema            // kindNamed
}

func leaf(k kind) *schema { return &schema{kind: k} }

// section is a section of fields, and of the fields of each of more.
func section(fields map[string]*schema, more ...map[string]*schema) *schema {
	for _, m := range more {
		for k, v := range m {
			fields[k] = v
		}
	}
	return &schema{kind: kindSection, fields: fields}
}

// queueKeys are the keys of a queue policy (QueueKeys), under
// resources.NAME and providers.NAME.
var queueKeys = map[string]*schema{
	"priorities":    leaf(kindList),
	"reserve":       leaf(kindList),
	"cap":           leaf(kindList),
	"max_overtakes": leaf(kindInt),
	"fair":          leaf(kindBool),
	"fair_weights":  leaf(kindList),
	"fair_cap":      leaf(kindInt),
	"max_queue":     leaf(kindInt),
	"max_wait":      leaf(kindDuration),
	"policy":        leaf(kindString),
}

// root is the shape of exec-defaults.yaml. Keep it in step with Config's
// mapstructure tags: Load decodes with viper's UnmarshalExact, so a key
// here without a field fails every Load.
var root = section(map[string]*schema{
	"project": leaf(kindString),
	"backend": leaf(kindString),
	"redis": section(map[string]*schema{
		"url":             leaf(kindString),
		"allow_eviction":  leaf(kindBool),
		"loss_quarantine": leaf(kindBool),
	}),
	"file": section(map[string]*schema{"dir": leaf(kindString)}),
	"lease": section(map[string]*schema{
		"ttl":       leaf(kindDuration),
		"heartbeat": leaf(kindDuration),
	}),
	"run": section(map[string]*schema{"max_concurrent_runs": leaf(kindInt)}),
	"providers": {kind: kindNamed, entry: section(map[string]*schema{
		"max_concurrency":     leaf(kindInt),
		"requests_per_minute": leaf(kindInt),
		"tokens_per_minute":   leaf(kindInt),
		"burst":               leaf(kindInt),
		// adaptive concurrency (AIMD); flat keys, as a provider's name
		// may hold dots (splitKey).
		"adaptive":                leaf(kindBool),
		"adaptive_min":            leaf(kindInt),
		"adaptive_increase_every": leaf(kindInt),
		"on_backend_down":         leaf(kindString),
		"shadow":                  leaf(kindBool),
	}, queueKeys, capacityKeys)},
	"resources": {kind: kindNamed, entry: section(map[string]*schema{
		"limit":      leaf(kindInt),
		"mkdir_lock": leaf(kindString),
	}, queueKeys, capacityKeys)},
	"lock_order": leaf(kindList),
	"budgets":    {kind: kindNamed, entry: section(budgetKeys)},
	"prices":     {kind: kindNamed, entry: section(priceKeys)},
})

// lookup returns the schema of path, or nil if path names no key.
func lookup(path []string) *schema {
	s := root
	for _, seg := range path {
		switch s.kind {
		case kindSection:
			s = s.fields[seg]
		case kindNamed:
			s = s.entry
		default:
			return nil
		}
		if s == nil {
			return nil
		}
	}
	return s
}

// dotted is how a path is shown and how Sources and Flags spell it.
func dotted(path []string) string { return strings.Join(path, ".") }

// splitKey turns a dotted key into a path. The name in
// providers.<name>.<field> and resources.<name>.<field> may itself
// contain dots, so for those the first and last dots split.
func splitKey(key string) []string {
	first, rest, ok := strings.Cut(key, ".")
	if !ok {
		return []string{key}
	}
	if s := root.fields[first]; s != nil && s.kind == kindNamed {
		if i := strings.LastIndexByte(rest, '.'); i >= 0 {
			return []string{first, rest[:i], rest[i+1:]}
		}
		return []string{first, rest}
	}
	return append([]string{first}, strings.Split(rest, ".")...)
}

// leafKeys returns every leaf path of s below prefix, with "<name>" for
// the names of named sections.
func leafKeys(s *schema, prefix []string) [][]string {
	switch s.kind {
	case kindSection:
		var out [][]string
		for _, k := range sortedKeys(s.fields) {
			out = append(out, leafKeys(s.fields[k], append(slices.Clone(prefix), k))...)
		}
		return out
	case kindNamed:
		return leafKeys(s.entry, append(slices.Clone(prefix), "<name>"))
	}
	return [][]string{prefix}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// suggest returns the dotted key the user most likely meant by the unknown
// key at path (whose last element is the unknown one), or "". It tries the
// sibling keys by edit distance, then a key of the same name elsewhere
// (top-level "ttl" -> "lease.ttl").
func suggest(path []string, siblings []string) string {
	bad := path[len(path)-1]
	lower := strings.ToLower(bad)
	if best := nearest.Names(lower, siblings); len(best) > 0 {
		return dotted(append(slices.Clone(path[:len(path)-1]), best[0]))
	}
	for _, k := range leafKeys(root, nil) {
		if k[len(k)-1] == lower && !slices.Contains(k, "<name>") {
			return dotted(k)
		}
	}
	return ""
}
