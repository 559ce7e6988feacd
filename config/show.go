package config

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
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

// valueOf formats the value at path as the file would hold it. The value
// is found by the mapstructure tags that load it (a map entry for a
// provider's or a resource's name), so that every key the schema has is
// shown, not only those a list here would name.
func (c Config) valueOf(path []string) string {
	switch dotted(path) {
	case "redis.url":
		return RedactURL(c.Redis.URL)
	case "redis.loss_quarantine":
		return strconv.FormatBool(c.Redis.Quarantine())
	}
	v := reflect.ValueOf(c)
	for _, part := range path {
		switch v.Kind() {
		case reflect.Struct:
			v = fieldTagged(v, part)
		case reflect.Map:
			v = v.MapIndex(reflect.ValueOf(part))
		default:
			return ""
		}
		if !v.IsValid() {
			return ""
		}
	}
	s, _ := formatValue(v)
	return s
}

// fieldTagged is the field of struct v whose mapstructure tag is name,
// looking into squashed structs; the zero Value when there is none.
func fieldTagged(v reflect.Value, name string) reflect.Value {
	t := v.Type()
	for i := range t.NumField() {
		tag, opts, _ := strings.Cut(t.Field(i).Tag.Get("mapstructure"), ",")
		if tag == name && name != "" {
			return v.Field(i)
		}
		if tag == "" && opts == "squash" {
			if f := fieldTagged(v.Field(i), name); f.IsValid() {
				return f
			}
		}
	}
	return reflect.Value{}
}

// formatValue writes a leaf value of Config as a file holds it; false for
// a type it does not know.
func formatValue(v reflect.Value) (string, bool) {
	switch x := v.Interface().(type) {
	case string:
		return x, true
	case int:
		return strconv.Itoa(x), true
	case bool:
		return strconv.FormatBool(x), true
	case *int:
		if x == nil {
			return "", true
		}
		return strconv.Itoa(*x), true
	case *bool:
		if x == nil {
			return "", true
		}
		return strconv.FormatBool(*x), true
	case time.Duration:
		return x.String(), true
	case Amount:
		return x.String(), true
	case []string:
		return strings.Join(x, ","), true
	}
	return "", false
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
