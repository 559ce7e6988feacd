package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor/capacity"
)

// TestCapacityLoads: capacity: true turns a resource's or a provider's
// capacity leases on (a provider with requests_per_minute or tokens_per_minute alone too), with the intervals given or the defaults.
func TestCapacityLoads(t *testing.T) {
	e := newEnv(t)
	l, _, err := e.loadFile(`providers:
  anthropic:
    max_concurrency: 512
    capacity: true
  openai:
    requests_per_minute: 100000
    capacity: true
  tokens:
    tokens_per_minute: 100000
    capacity: true
resources:
  gpu:
    limit: 4
    capacity: true
    capacity_lease: 15s
    capacity_refresh: 2s
  plain:
    limit: 4
`)
	if err != nil {
		t.Fatal(err)
	}
	got := l.Config.Capacity()
	want := map[string]capacity.Config{"provider:anthropic": {Lease: 30 * time.Second, Refresh: 5 * time.Second},
		"provider:openai": {Lease: 30 * time.Second, Refresh: 5 * time.Second}, "gpu": {Lease: 15 * time.Second, Refresh: 2 * time.Second},
		"provider:tokens": {Lease: 30 * time.Second, Refresh: 5 * time.Second}}
	if len(got) != len(want) || got["provider:anthropic"] != want["provider:anthropic"] || got["gpu"] != want["gpu"] ||
		got["provider:openai"] != want["provider:openai"] || got["provider:tokens"] != want["provider:tokens"] {
		t.Fatalf("Capacity() = %v; want %v", got, want)
	}
}

// TestCapacityRefused: each refused capacity names its key, line and
// value, and what is allowed.
func TestCapacityRefused(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"resources:\n  r:\n    limit: 1\n    capacity: true\n", ":4: resources.r.capacity: capacity is not allowed here: its limit is 1: an exclusive resource stays exact and central"},
		{"resources:\n  r:\n    limit: 4\n    fair: true\n    capacity: true\n", ":5: resources.r.capacity: capacity is not allowed here: it has a queue policy"},
		{"providers:\n  p:\n    shadow: true\n    capacity: true\n", ":4: providers.p.capacity: capacity is not allowed here: it has none of max_concurrency, requests_per_minute and tokens_per_minute"},
		{"resources:\n  r:\n    limit: 4\n    capacity: true\n    capacity_refresh: 30s\n", ":5: resources.r.capacity_refresh: capacity refresh 30s with lease 30s; allowed: more than 0 and less than 27s"},
		{"resources:\n  r:\n    limit: 4\n    capacity: true\n    capacity_lease: 0s\n", ":5: resources.r.capacity_lease: 0s is not allowed; a capacity interval must be more than 0"},
		{"resources:\n  r:\n    limit: 4\n    capacity: true\n    capacity_refresh: -1s\n", ":5: resources.r.capacity_refresh: -1s is not allowed"},
		{"resources:\n  r:\n    limit: 4\n    capacity_lease: 10s\n", ":4: resources.r.capacity_lease: is set but resources.r.capacity is not true"},
	} {
		e := newEnv(t)
		_, _, err := e.loadFile(tc.yaml)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v; want %q", tc.yaml, err, tc.want)
		}
	}
}
