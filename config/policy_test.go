package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
)

func TestQueuePolicyLoads(t *testing.T) {
	e := newEnv(t)
	l, _, err := e.loadFile(`resources:
  gpu:
    limit: 4
    priorities: [critical, default, batch]
    reserve: [critical=1]
    cap: [batch=2]
    max_overtakes: 5
    fair_weights: [alice=2]
    fair_cap: 3
    max_queue: 100
    max_wait: 10m
    policy: eager
`)
	if err != nil {
		t.Fatal(err)
	}
	got := l.Config.Policies()["gpu"]
	want := governor.Policy{Classes: []governor.Class{{Name: "critical", Reserve: 1}, {Name: "default"}, {Name: "batch", Cap: 2}},
		MaxOvertakes: 5, FairWeights: map[string]int{"alice": 2}, FairCap: 3, MaxQueue: 100, MaxWait: 10 * time.Minute, Eager: true}
	if got.Encode() != want.Encode() {
		t.Fatalf("policy %q, want %q", got.Encode(), want.Encode())
	}
	if _, ok := l.Config.Policies()["run"]; ok {
		t.Fatal("a resource without a policy has one")
	}
}

// Each bad value is refused naming it and what is allowed.
func TestQueuePolicyErrors(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"priorities: [a, a]", `priority class "a" of gpu given twice`},
		{"priorities: [a b]", `priority class "a b" of gpu; allowed: 1 to 64 of A-Z a-z 0-9 . _ - @`},
		{"priorities: [a, b]\n    reserve: [c=1]", `reserve "c=1"; allowed: NAME=N items`},
		{"priorities: [a, b]\n    reserve: [a=x]", `reserve "a=x"; allowed: NAME=N items`},
		{"priorities: [a, b]\n    reserve: [a=4]", "the reserves of gpu sum to 4; allowed: at most the limit 4 minus 1"},
		{"priorities: [a, b]\n    reserve: [b=1]", "priority class b of gpu is the lowest: reserve 1; allowed: 0"},
		{"priorities: [a, b]\n    cap: [b=5]", "priority class b of gpu: cap 5; allowed: 0 (none) to the limit 4"},
		{"fair_weights: [k=0]", "fair weight 0 of key k of gpu; allowed: 1 to 1000"},
		{"fair_cap: -1", "fair_cap -1 for gpu; allowed: 0 (none) to the limit"},
		{"max_queue: -2", "max_queue -2 for gpu; allowed: 0 (none) to 1048576"},
		{"max_wait: 0.5ms", "max_wait 500µs for gpu; allowed: 0 (none) or 1ms to 24h0m0s"},
		{"policy: lifo", `policy "lifo"; allowed: fifo, eager`},
	} {
		e := newEnv(t)
		_, _, err := e.loadFile("resources:\n  gpu:\n    limit: 4\n    " + tc.yaml + "\n")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", tc.yaml, err, tc.want)
		}
	}
}

// A configured provider has a queue policy under providers.P (issue
// 25.13): the catalog's provider:P carries it; one without
// max_concurrency, or one the limit cannot hold, is refused naming it.
func TestProviderQueuePolicy(t *testing.T) {
	e := newEnv(t)
	l, _, err := e.loadFile(`providers:
  anthropic:
    max_concurrency: 4
    priorities: [critical, default, batch]
    reserve: [critical=1]
    cap: [batch=2]
`)
	if err != nil {
		t.Fatal(err)
	}
	r, ok := l.Catalog().Resource("provider:anthropic")
	want := governor.Policy{Classes: []governor.Class{{Name: "critical", Reserve: 1}, {Name: "default"}, {Name: "batch", Cap: 2}}}
	if !ok || r.Policy.Encode() != want.Encode() || r.Limit != 4 || r.Provider == nil {
		t.Fatalf("provider:anthropic %+v; want limit 4, policy %q", r, want.Encode())
	}
	for cfg, msg := range map[string]string{
		"providers:\n  openai:\n    requests_per_minute: 60\n    priorities: [critical, batch]\n":                       "a queue policy needs providers.openai.max_concurrency",
		"providers:\n  openai:\n    max_concurrency: 2\n    priorities: [critical, batch]\n    reserve: [critical=5]\n": "provider:openai",
		"providers:\n  openai:\n    max_concurrency: 2\n    policy: lifo\n":                                             `policy "lifo"; allowed: fifo, eager`,
	} {
		if _, _, err := e.loadFile(cfg); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: %v; want an error with %q", cfg, err, msg)
		}
	}
}
