package config

import (
	"slices"
	"strings"
)

// kind is the shape a key's value must have.
type kind int

const (
	kindString   kind = iota + 1
	kindInt           // a whole number
	kindDuration      // Go duration syntax: 30s, 1m30s
	kindList          // a list of strings
	kindSection       // a mapping with the fixed keys in fields
	kindNamed         // a mapping from user-chosen names to entries shaped like entry
)

type schema struct {
	kind   kind
	fields map[string]*schema // kindSection
	entry  *schema            // kindNamed
}

func leaf(k kind) *schema { return &schema{kind: k} }

func section(fields map[string]*schema) *schema {
	return &schema{kind: kindSection, fields: fields}
}

// root is the shape of exec-defaults.yaml. Keep it in step with Config's
// mapstructure tags: Load decodes with viper's UnmarshalExact, so a key
// here without a field fails every Load.
var root = section(map[string]*schema{
	"project": leaf(kindString),
	"backend": leaf(kindString),
	"redis":   section(map[string]*schema{"url": leaf(kindString)}),
	"file":    section(map[string]*schema{"dir": leaf(kindString)}),
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
	})},
	"resources":  {kind: kindNamed, entry: section(map[string]*schema{"limit": leaf(kindInt)})},
	"lock_order": leaf(kindList),
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
	best, bestDist := "", 0
	for _, s := range siblings {
		d := editDistance(lower, s)
		if d <= max(1, len(s)/4) && (best == "" || d < bestDist) {
			best, bestDist = s, d
		}
	}
	if best != "" {
		return dotted(append(slices.Clone(path[:len(path)-1]), best))
	}
	for _, k := range leafKeys(root, nil) {
		if k[len(k)-1] == lower && !slices.Contains(k, "<name>") {
			return dotted(k)
		}
	}
	return ""
}

// editDistance is the optimal-string-alignment distance between a and b:
// insertions, deletions, substitutions and transpositions of adjacent
// bytes (keys are ASCII) each count 1, so "porject" is 1 from "project".
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
