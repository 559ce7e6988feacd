package config_test

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/governor-dev/governor/config"
)

func TestShow(t *testing.T) {
	e := newEnv(t, "XDG_STATE_HOME=/var/state")
	e.write(config.DefaultFileName, `
project: prj-0001
redis:
  url: redis://app:hunter2@redis.internal:6379/3
lease:
  ttl: 45s
`+sampleLimits)
	l, err := e.load(config.LoadOptions{
		Env:   []string{"GOVERNOR_BACKEND=redis", "GOVERNOR_PROVIDERS_ANTHROPIC_TOKENS_PER_MINUTE=40000", "GOVERNOR_SESSION=abc"},
		Flags: map[string]string{"project": "other", "resources.heavy.limit": "2"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []config.Entry{
		{"backend", "redis", config.SourceEnv},
		{"file.dir", "/var/state/governor", config.SourceDefault},
		{"lease.heartbeat", "10s", config.SourceDefault},
		{"lease.ttl", "45s", config.SourceFile},
		{"lock_order", "", config.SourceDefault},
		{"project", "other", config.SourceFlag},
		{"providers.anthropic.max_concurrency", "2", config.SourceFile},
		{"providers.anthropic.requests_per_minute", "50", config.SourceFile},
		{"providers.anthropic.tokens_per_minute", "40000", config.SourceEnv},
		{"redis.allow_eviction", "false", config.SourceDefault},
		{"redis.loss_quarantine", "true", config.SourceDefault},
		{"redis.url", "redis://app:***@redis.internal:6379/3", config.SourceFile},
		{"resources.heavy.limit", "2", config.SourceFlag},
		{"run.max_concurrent_runs", "4", config.SourceFile},
	}
	if got := l.Show(); !slices.Equal(got, want) {
		t.Errorf("Show() =\n%v\nwant\n%v", got, want)
	}
	if got := l.Config.RedisURL(); got != "redis://app:hunter2@redis.internal:6379/3" {
		t.Errorf("RedisURL() = %q; it must keep the password for connecting", got)
	}
}

func TestLimits(t *testing.T) {
	c := config.Config{
		Run: config.Run{MaxConcurrentRuns: intp(4)},
		Providers: map[string]config.Provider{
			"anthropic": {MaxConcurrency: intp(2), RequestsPerMinute: 50},
			"openai":    {RequestsPerMinute: 500}, // rates only: no resource
		},
		Resources: map[string]config.Resource{"heavy": {Limit: 1}, "issue:2316": {Limit: 1}},
	}
	want := map[string]int{"run": 1, "run:join": 3, "provider:anthropic": 2, "heavy": 1, "issue:2316": 1}
	if got := c.Limits(); !maps.Equal(got, want) {
		t.Errorf("Limits() = %v, want %v", got, want)
	}
	// The run lock and the join slots: max_concurrent_runs-1 of them,
	// none at 1, the default of 4 when unset.
	for _, tc := range []struct {
		max  *int
		want map[string]int
	}{
		{nil, map[string]int{"run": 1, "run:join": 3}},
		{intp(1), map[string]int{"run": 1}},
		{intp(2), map[string]int{"run": 1, "run:join": 1}},
	} {
		if got := (config.Config{Run: config.Run{MaxConcurrentRuns: tc.max}}).Limits(); !maps.Equal(got, tc.want) {
			t.Errorf("max_concurrent_runs %v: Limits() = %v, want %v", tc.max, got, tc.want)
		}
	}
}

// TestMaxConcurrentRunsDefault: with no source setting it, Load gives
// run.max_concurrent_runs 4, shown as a default.
func TestMaxConcurrentRunsDefault(t *testing.T) {
	l, err := config.Load(config.LoadOptions{Env: []string{"HOME=" + t.TempDir()}, Getwd: func() (string, error) { return t.TempDir(), nil }})
	if err != nil {
		t.Fatal(err)
	}
	if p := l.Config.Run.MaxConcurrentRuns; p == nil || *p != 4 {
		t.Fatalf("run.max_concurrent_runs = %v, want 4", p)
	}
	if got := l.Sources["run.max_concurrent_runs"]; got != config.SourceDefault {
		t.Errorf("source = %q, want default", got)
	}
	if got := l.Config.Limits(); got["run"] != 1 || got["run:join"] != 3 {
		t.Errorf("Limits() = %v, want run 1 and run:join 3", got)
	}
}

func TestResolvedBackend(t *testing.T) {
	tests := []struct {
		backend, url, want string
	}{
		{"auto", "", "file"},
		{"", "", "file"},
		{"auto", "redis://h", "redis"},
		{"file", "redis://h", "file"},
		{"redis", "redis://h", "redis"},
	}
	for _, tt := range tests {
		c := config.Config{Backend: tt.backend, Redis: config.Redis{URL: tt.url}}
		if got := c.ResolvedBackend(); got != tt.want {
			t.Errorf("Backend %q URL %q: ResolvedBackend() = %q, want %q", tt.backend, tt.url, got, tt.want)
		}
	}
}

func ExampleLoad() {
	dir, cleanup := exampleDir()
	defer cleanup()
	l, err := config.Load(config.LoadOptions{
		File:  filepath.Join(dir, "exec-defaults.yaml"),
		Env:   []string{"HOME=" + dir, "GOVERNOR_LEASE_TTL=1m"},
		Flags: map[string]string{"project": "nightly"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, name := range slices.Sorted(maps.Keys(l.Config.Limits())) {
		fmt.Printf("%s = %d\n", name, l.Config.Limits()[name])
	}
	for _, e := range l.Show() {
		if e.Key != "file.dir" {
			fmt.Printf("%-38s %-28s %s\n", e.Key, e.Value, e.Source)
		}
	}
	// Output:
	// heavy = 1
	// provider:anthropic = 2
	// run = 1
	// run:join = 3
	// backend                                auto                         default
	// lease.heartbeat                        10s                          default
	// lease.ttl                              1m0s                         env
	// lock_order                                                          default
	// project                                nightly                      flag
	// providers.anthropic.max_concurrency    2                            file
	// providers.anthropic.requests_per_minute 50                           file
	// redis.allow_eviction                   false                        default
	// redis.loss_quarantine                  true                         default
	// redis.url                              redis://u:***@127.0.0.1:6379/0 file
	// resources.heavy.limit                  1                            file
	// run.max_concurrent_runs                4                            file
}

func ExampleLoad_errors() {
	dir, cleanup := exampleDir()
	defer cleanup()
	path := filepath.Join(dir, "bad.yaml")
	writeFile(path, "run:\n  max_concurent_runs: 4\nlease:\n  ttl: 10s\n  heartbeat: 10s\n")
	_, err := config.Load(config.LoadOptions{File: path, Env: []string{"HOME=" + dir}})
	fmt.Println(strings.ReplaceAll(err.Error(), path, "bad.yaml"))
	// Output:
	// bad.yaml:2: run.max_concurent_runs: unknown key; did you mean run.max_concurrent_runs? (allowed under run: max_concurrent_runs)
	// bad.yaml:5: lease.heartbeat: 10s is not shorter than lease.ttl 10s; a holder must renew well before its lease expires, so use a heartbeat of about a third of the TTL (3.333333333s)
}

// Every key a file sets is shown with its value, providers' adaptive,
// shadow, degraded-mode and queue-policy keys included (they were shown
// empty).
func TestShowEveryKey(t *testing.T) {
	e := newEnv(t)
	l, _, err := e.loadFile(`providers:
  anthropic:
    max_concurrency: 4
    requests_per_minute: 10
    tokens_per_minute: 1000
    burst: 3
    adaptive: true
    adaptive_min: 2
    adaptive_increase_every: 5
    on_backend_down: open
    shadow: true
    priorities: [critical, default]
    reserve: [critical=1]
    max_wait: 1m
resources:
  gpu:
    limit: 4
    fair: true
    fair_cap: 2
    policy: eager
`)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"providers.anthropic.max_concurrency":         "4",
		"providers.anthropic.requests_per_minute":     "10",
		"providers.anthropic.tokens_per_minute":       "1000",
		"providers.anthropic.burst":                   "3",
		"providers.anthropic.adaptive":                "true",
		"providers.anthropic.adaptive_min":            "2",
		"providers.anthropic.adaptive_increase_every": "5",
		"providers.anthropic.on_backend_down":         "open",
		"providers.anthropic.shadow":                  "true",
		"providers.anthropic.priorities":              "critical,default",
		"providers.anthropic.reserve":                 "critical=1",
		"providers.anthropic.max_wait":                "1m0s",
		"resources.gpu.limit":                         "4",
		"resources.gpu.fair":                          "true",
		"resources.gpu.fair_cap":                      "2",
		"resources.gpu.policy":                        "eager",
	}
	got := map[string]string{}
	for _, en := range l.Show() {
		if en.Source == config.SourceFile {
			got[en.Key] = en.Value
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("Show() of the file's keys =\n%v\nwant\n%v", got, want)
	}
}
