package config_test

import (
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/governor-dev/governor/config"
)

func TestLoadDefaults(t *testing.T) {
	e := newEnv(t)
	l, err := e.load(config.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l.File != "" {
		t.Errorf("File = %q, want none", l.File)
	}
	c := l.Config
	want := map[string]bool{
		"project":   c.Project == config.DefaultProject,
		"backend":   c.Backend == config.BackendAuto,
		"resolved":  c.ResolvedBackend() == config.BackendFile,
		"ttl":       c.Lease.TTL == 30*time.Second,
		"heartbeat": c.Lease.Heartbeat == 10*time.Second,
		"dir":       c.File.Dir == filepath.Join(e.home, ".local", "state", "governor"),
		"redis":     c.RedisURL() == "",
		"limits":    maps.Equal(c.Limits(), map[string]int{"run": 1, "run:join": 3}),
	}
	for name, ok := range want {
		if !ok {
			t.Errorf("%s: not the default; config %+v", name, c)
		}
	}
	for key, src := range l.Sources {
		if src != config.SourceDefault {
			t.Errorf("Sources[%q] = %q, want default", key, src)
		}
	}
}

func TestLoadPrecedence(t *testing.T) {
	const file = `
project: from-file
backend: file
redis:
  url: redis://file:6379/0
  allow_eviction: true
  loss_quarantine: false
file:
  dir: /file/dir
lease:
  ttl: 60s
  heartbeat: 20s
run:
  max_concurrent_runs: 4
providers:
  anthropic:
    max_concurrency: 2
resources:
  heavy: {limit: 1}
`
	env := []string{
		"GOVERNOR_PROJECT=from-env",
		"GOVERNOR_BACKEND=redis",
		"GOVERNOR_REDIS_URL=redis://env:6379/1",
		"GOVERNOR_DIR=/env/dir",
		"GOVERNOR_LEASE_TTL=90s",
		"GOVERNOR_RUN_MAX_CONCURRENT_RUNS=5",
		"GOVERNOR_PROVIDERS_ANTHROPIC_MAX_CONCURRENCY=3",
		"GOVERNOR_RESOURCES_HEAVY_LIMIT=2",
		"GOVERNOR_REDIS_ALLOW_EVICTION=false",
	}
	flags := map[string]string{
		"project":               "from-flag",
		"redis.url":             "redis://flag:6379/2",
		"redis.loss_quarantine": "true",
		"file.dir":              "/flag/dir",
	}
	tests := []struct {
		key    string
		get    func(config.Config) any
		file   any // with the file only
		env    any // with the file and the environment
		flag   any // with all three
		source config.Source
	}{
		{"project", func(c config.Config) any { return c.Project }, "from-file", "from-env", "from-flag", config.SourceFlag},
		{"backend", func(c config.Config) any { return c.Backend }, "file", "redis", "redis", config.SourceEnv},
		{"redis.url", func(c config.Config) any { return c.RedisURL() }, "redis://file:6379/0", "redis://env:6379/1", "redis://flag:6379/2", config.SourceFlag},
		{"redis.allow_eviction", func(c config.Config) any { return c.Redis.AllowEviction }, true, false, false, config.SourceEnv},
		{"redis.loss_quarantine", func(c config.Config) any { return c.Redis.Quarantine() }, false, false, true, config.SourceFlag},
		{"file.dir", func(c config.Config) any { return c.File.Dir }, "/file/dir", "/env/dir", "/flag/dir", config.SourceFlag},
		{"lease.ttl", func(c config.Config) any { return c.Lease.TTL }, 60 * time.Second, 90 * time.Second, 90 * time.Second, config.SourceEnv},
		{"lease.heartbeat", func(c config.Config) any { return c.Lease.Heartbeat }, 20 * time.Second, 20 * time.Second, 20 * time.Second, config.SourceFile},
		{"run.max_concurrent_runs", func(c config.Config) any { return *c.Run.MaxConcurrentRuns }, 4, 5, 5, config.SourceEnv},
		{"providers.anthropic.max_concurrency", func(c config.Config) any { return *c.Providers["anthropic"].MaxConcurrency }, 2, 3, 3, config.SourceEnv},
		{"resources.heavy.limit", func(c config.Config) any { return c.Resources["heavy"].Limit }, 1, 2, 2, config.SourceEnv},
	}

	e := newEnv(t)
	e.write(config.DefaultFileName, file)
	fileOnly, err := e.load(config.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	withEnv, err := e.load(config.LoadOptions{Env: env})
	if err != nil {
		t.Fatal(err)
	}
	withFlags, err := e.load(config.LoadOptions{Env: env, Flags: flags})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			if got := tt.get(fileOnly.Config); got != tt.file {
				t.Errorf("file only: %v, want %v", got, tt.file)
			}
			if got := fileOnly.Sources[tt.key]; got != config.SourceFile {
				t.Errorf("file only: source %q, want file", got)
			}
			if got := tt.get(withEnv.Config); got != tt.env {
				t.Errorf("file+env: %v, want %v", got, tt.env)
			}
			if got := tt.get(withFlags.Config); got != tt.flag {
				t.Errorf("file+env+flags: %v, want %v", got, tt.flag)
			}
			if got := withFlags.Sources[tt.key]; got != tt.source {
				t.Errorf("file+env+flags: source %q, want %q", got, tt.source)
			}
		})
	}
}

func TestLoadSearchOrder(t *testing.T) {
	t.Run("cwd wins over XDG", func(t *testing.T) {
		e := newEnv(t)
		xdg := filepath.Join(e.home, "xdg")
		e.vars = append(e.vars, "XDG_CONFIG_HOME="+xdg)
		cwdFile := e.write(config.DefaultFileName, "project: cwd\n")
		e.write(filepath.Join(xdg, "governor", config.DefaultFileName), "project: xdg\n")
		e.found(config.LoadOptions{}, cwdFile, "cwd")
	})
	t.Run("XDG_CONFIG_HOME when no cwd file", func(t *testing.T) {
		e := newEnv(t)
		xdg := filepath.Join(e.home, "xdg")
		e.vars = append(e.vars, "XDG_CONFIG_HOME="+xdg)
		xdgFile := e.write(filepath.Join(xdg, "governor", config.DefaultFileName), "project: xdg\n")
		e.found(config.LoadOptions{}, xdgFile, "xdg")
	})
	t.Run("~/.config without XDG_CONFIG_HOME", func(t *testing.T) {
		e := newEnv(t)
		want := e.write(filepath.Join(e.home, ".config", "governor", config.DefaultFileName), "project: home\n")
		e.found(config.LoadOptions{}, want, "home")
	})
	t.Run("relative XDG_CONFIG_HOME is ignored", func(t *testing.T) {
		e := newEnv(t, "XDG_CONFIG_HOME=rel")
		e.write(filepath.Join(e.cwd, "rel", "governor", config.DefaultFileName), "project: rel\n")
		want := e.write(filepath.Join(e.home, ".config", "governor", config.DefaultFileName), "project: home\n")
		e.found(config.LoadOptions{}, want, "home")
	})
	t.Run("--config overrides the search", func(t *testing.T) {
		e := newEnv(t)
		e.write(config.DefaultFileName, "project: cwd\n")
		want := e.write("conf/other.yaml", "project: other\n")
		e.found(config.LoadOptions{File: "conf/other.yaml"}, want, "other")
	})
	t.Run("--config missing", func(t *testing.T) {
		e := newEnv(t)
		e.write(config.DefaultFileName, "project: cwd\n")
		_, err := e.load(config.LoadOptions{File: "missing.yaml"})
		missing := filepath.Join(e.cwd, "missing.yaml")
		if err == nil || err.Error() != "config: config file "+missing+" (from --config): no such file or directory" {
			t.Errorf("err = %v", err)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("errors.Is(%v, fs.ErrNotExist) = false", err)
		}
	})
	t.Run("--config is a directory", func(t *testing.T) {
		e := newEnv(t)
		_, err := e.load(config.LoadOptions{File: e.home})
		if err == nil || err.Error() != "config: config file "+e.home+" is a directory" {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("found file that is a directory is an error, not skipped", func(t *testing.T) {
		e := newEnv(t)
		dir := filepath.Join(e.cwd, config.DefaultFileName)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		e.write(filepath.Join(e.home, ".config", "governor", config.DefaultFileName), "project: home\n")
		_, err := e.load(config.LoadOptions{})
		if err == nil || err.Error() != "config: config file "+dir+" is a directory" {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("unreadable found file is an error, not skipped", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("root reads any file")
		}
		e := newEnv(t)
		path := e.write(config.DefaultFileName, "project: x\n")
		if err := os.Chmod(path, 0); err != nil {
			t.Fatal(err)
		}
		_, err := e.load(config.LoadOptions{})
		if err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("err = %v, want one naming %s", err, path)
		}
	})
}

func TestLoadEnvironment(t *testing.T) {
	e := newEnv(t)
	e.write(config.DefaultFileName, `
providers:
  OpenAI:
    requests_per_minute: 10
  claude-3:
    max_concurrency: 1
`)
	l, err := e.load(config.LoadOptions{Env: []string{
		// runtime variables, not configuration
		"GOVERNOR_SESSION=s1", "GOVERNOR_HELD=run:abc", "GOVERNOR_TOKEN=7", "GOVERNOR_REQUIRE_REDIS=1",
		"GOVERNOR_PROVIDERS_OPENAI_TOKENS_PER_MINUTE=1000", // matches OpenAI, spelling kept
		"GOVERNOR_PROVIDERS_CLAUDE_3_MAX_CONCURRENCY=4",    // matches claude-3
		"GOVERNOR_PROVIDERS_MISTRAL_MAX_CONCURRENCY=2",     // a new provider, "mistral"
		"GOVERNOR_RESOURCES_GPU_LIMIT=1",
		"GOVERNOR_LOCK_ORDER=issue, plan",
		"GOVERNOR_FILE_DIR=/ignored", "GOVERNOR_DIR=/state", // GOVERNOR_DIR wins
		"GOVERNOR_PROJECT=", // empty is not set
	}})
	if err != nil {
		t.Fatal(err)
	}
	c := l.Config
	if got := c.Providers["OpenAI"]; got.RequestsPerMinute != 10 || got.TokensPerMinute != 1000 {
		t.Errorf("OpenAI = %+v", got)
	}
	if _, ok := c.Providers["openai"]; ok {
		t.Errorf("providers has both OpenAI and openai: %v", c.Providers)
	}
	if got := c.Limits(); !maps.Equal(got, map[string]int{"provider:claude-3": 4, "provider:mistral": 2, "gpu": 1, "run": 1, "run:join": 3}) {
		t.Errorf("Limits() = %v", got)
	}
	if !slices.Equal(c.LockOrder, []string{"issue", "plan"}) {
		t.Errorf("LockOrder = %q", c.LockOrder)
	}
	if c.File.Dir != "/state" || c.Project != config.DefaultProject {
		t.Errorf("dir %q project %q", c.File.Dir, c.Project)
	}
	if got := l.Sources["providers.OpenAI.tokens_per_minute"]; got != config.SourceEnv {
		t.Errorf("source of providers.OpenAI.tokens_per_minute = %q", got)
	}
}

func TestLoadNamesKeepTheirSpelling(t *testing.T) {
	e := newEnv(t)
	l, _, err := e.loadFile(`
providers:
  gpt-4.1: {max_concurrency: 3}
  Anthropic: {max_concurrency: 2}
resources:
  GPU:0: {limit: 1}
  file:src/main.go: {limit: 1}
`)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"provider:gpt-4.1": 3, "provider:Anthropic": 2, "GPU:0": 1, "file:src/main.go": 1, "run": 1, "run:join": 3}
	if got := l.Config.Limits(); !maps.Equal(got, want) {
		t.Errorf("Limits() = %v, want %v", got, want)
	}
	l2, err := e.load(config.LoadOptions{Flags: map[string]string{"providers.gpt-4.1.max_concurrency": "5"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := *l2.Config.Providers["gpt-4.1"].MaxConcurrency; got != 5 {
		t.Errorf("flag providers.gpt-4.1.max_concurrency: %d, want 5", got)
	}
}

func TestLoadFileDir(t *testing.T) {
	tests := []struct {
		name  string
		file  string
		vars  []string
		flags map[string]string
		want  func(e *env) string
	}{
		{"default XDG_STATE_HOME", "", []string{"XDG_STATE_HOME=/xdg/state"}, nil,
			func(*env) string { return "/xdg/state/governor" }},
		{"relative XDG_STATE_HOME ignored", "", []string{"XDG_STATE_HOME=state"}, nil,
			func(e *env) string { return filepath.Join(e.home, ".local/state/governor") }},
		{"empty in file means default", "file: {dir: \"\"}\n", nil, nil,
			func(e *env) string { return filepath.Join(e.home, ".local/state/governor") }},
		{"relative in file is from the file's directory", "file: {dir: state}\n", nil, nil,
			func(e *env) string { return filepath.Join(e.cwd, "conf", "state") }},
		{"tilde", "file: {dir: ~/g}\n", nil, nil,
			func(e *env) string { return filepath.Join(e.home, "g") }},
		{"relative flag is from the working directory", "", nil, map[string]string{"file.dir": "st"},
			func(e *env) string { return filepath.Join(e.cwd, "st") }},
		{"relative env is from the working directory", "", []string{"GOVERNOR_DIR=./st/"}, nil,
			func(e *env) string { return filepath.Join(e.cwd, "st") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, tt.vars...)
			opts := config.LoadOptions{Flags: tt.flags}
			if tt.file != "" {
				opts.File = e.write("conf/g.yaml", tt.file)
			}
			l, err := e.load(opts)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := l.Config.File.Dir, tt.want(e); got != want {
				t.Errorf("File.Dir = %q, want %q", got, want)
			}
		})
	}
	t.Run("no HOME and no XDG_STATE_HOME", func(t *testing.T) {
		_, err := config.Load(config.LoadOptions{Env: []string{}, Getwd: func() (string, error) { return t.TempDir(), nil }})
		want := "file.dir: no state directory: set file.dir, GOVERNOR_DIR or --dir (the default needs $XDG_STATE_HOME or $HOME)"
		if err == nil || err.Error() != want {
			t.Errorf("err = %v, want %s", err, want)
		}
		// With Redis no directory is needed.
		_, err = config.Load(config.LoadOptions{Env: []string{"GOVERNOR_REDIS_URL=redis://h"}, Getwd: func() (string, error) { return t.TempDir(), nil }})
		if err != nil {
			t.Error(err)
		}
	})
}

func TestLoadHeartbeatFollowsShortTTL(t *testing.T) {
	tests := []struct {
		file      string
		heartbeat time.Duration
	}{
		{"lease: {ttl: 6s}\n", 2 * time.Second},
		{"lease: {ttl: 2m}\n", 10 * time.Second},
		// An explicit heartbeat stands; 5s would not (governor.New refuses
		// a heartbeat not shorter than the TTL minus its fifth, 4.8s).
		{"lease: {ttl: 6s, heartbeat: 4s}\n", 4 * time.Second},
	}
	for _, tt := range tests {
		e := newEnv(t)
		l, _, err := e.loadFile(tt.file)
		if err != nil {
			t.Fatalf("%q: %v", tt.file, err)
		}
		if l.Config.Lease.Heartbeat != tt.heartbeat {
			t.Errorf("%q: heartbeat %v, want %v", tt.file, l.Config.Lease.Heartbeat, tt.heartbeat)
		}
	}
}

func TestLoadSpecExample(t *testing.T) {
	e := newEnv(t)
	l, _, err := e.loadFile(specExample)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"run": 1, "run:join": 3, "provider:anthropic": 2, "heavy": 1, "lifecycle": 1}
	if got := l.Config.Limits(); !maps.Equal(got, want) {
		t.Errorf("Limits() = %v, want %v", got, want)
	}
	if got := l.Config.ResolvedBackend(); got != config.BackendRedis {
		t.Errorf("ResolvedBackend() = %q, want redis", got)
	}
}

// Load shares nothing between calls.
func TestLoadConcurrent(t *testing.T) {
	e := newEnv(t)
	e.write(config.DefaultFileName, specExample)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			l, err := e.load(config.LoadOptions{Flags: map[string]string{"project": "p" + string(rune('a'+i))}})
			if err != nil {
				t.Error(err)
				return
			}
			if want := "p" + string(rune('a'+i)); l.Config.Project != want {
				t.Errorf("project %q, want %q", l.Config.Project, want)
			}
		})
	}
	wg.Wait()
}

const specExample = `project: prj-0001
backend: auto              # auto | file | redis
redis:
  url: redis://127.0.0.1:6379/0   # rediss:// for TLS; user:password for ACL
file:
  dir: ""                  # default $XDG_STATE_HOME/governor
lease:
  ttl: 30s
  heartbeat: 10s
run:
  max_concurrent_runs: 4   # -> resource "run", 4 slots
providers:
  anthropic:
    max_concurrency: 2     # -> resource "provider:anthropic", 2 slots
    requests_per_minute: 50
    tokens_per_minute: 40000
resources:                 # any other named slot set
  heavy: {limit: 1}
  lifecycle: {limit: 1}
lock_order: [issue, plan, file, workspace]  # prefix order for multi-acquire
`

// Timing leaves a defaulted heartbeat to governor, so that a lease with
// its own TTL derives its own; a heartbeat that was set is passed on.
func TestTimingLeavesTheDefaultHeartbeatToGovernor(t *testing.T) {
	for _, tt := range []struct {
		file      string
		heartbeat time.Duration
	}{
		{"lease: {ttl: 6s}\n", 0},
		{"lease: {ttl: 6s, heartbeat: 1s}\n", time.Second},
	} {
		l, _, err := newEnv(t).loadFile(tt.file)
		if err != nil {
			t.Fatal(err)
		}
		if got := l.Config.Timing(); got.TTL != 6*time.Second || got.Heartbeat != tt.heartbeat || got.SafetyMargin != 0 {
			t.Errorf("%q: Timing() = %+v, want heartbeat %v", tt.file, got, tt.heartbeat)
		}
	}
}
