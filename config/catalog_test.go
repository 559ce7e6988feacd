package config_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/governor-dev/governor/config"
	"github.com/governor-dev/governor/internal/mkdirslot"
)

// The wrapper's variable names are the mkdir slot's: config names them
// without importing the tool's package.
func TestHeavyLockEnvNamesAreMkdirslots(t *testing.T) {
	if config.EnvHeavyLockDir != mkdirslot.EnvDir || config.EnvHeavyLockHeld != mkdirslot.EnvHeld {
		t.Fatalf("config %s %s; mkdirslot %s %s", config.EnvHeavyLockDir, config.EnvHeavyLockHeld, mkdirslot.EnvDir, mkdirslot.EnvHeld)
	}
}

func TestCatalog(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "exec-defaults.yaml")
	if err := os.WriteFile(file, []byte(`resources:
  heavy: {limit: 1, mkdir_lock: /tmp/hl}
  fz: {limit: 2, fair: true}
providers:
  anthropic: {max_concurrency: 3, requests_per_minute: 60}
  rates: {requests_per_minute: 10}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := config.Load(config.LoadOptions{File: file, Env: []string{"HOME=" + dir}})
	if err != nil {
		t.Fatal(err)
	}
	cat := l.Catalog()
	heavy, ok := cat.Resource("heavy")
	if !ok || heavy.Limit != 1 || heavy.MkdirLock != "/tmp/hl" || heavy.Origin != "resources.heavy.limit in "+file+":2" {
		t.Errorf("heavy = %+v, %v", heavy, ok)
	}
	if fz, _ := cat.Resource("fz"); !fz.Policy.Fair {
		t.Errorf("fz policy = %+v; want fair", fz.Policy)
	}
	a, ok := cat.Resource("provider:anthropic")
	if !ok || a.Limit != 3 || a.Provider == nil || a.Provider.Requests.Rate != 60 {
		t.Errorf("provider:anthropic = %+v, %v", a, ok)
	}
	r, ok := cat.Resource("provider:rates")
	if !ok || r.Limit != 0 || r.Provider == nil || !r.Provider.RateLimited() {
		t.Errorf("provider:rates = %+v, %v", r, ok)
	}
	if _, ok := cat.Limits()["provider:rates"]; ok {
		t.Errorf("Limits() has provider:rates, which has no max_concurrency")
	}
	if run, ok := cat.Resource(config.RunResource); !ok || run.Limit != 1 {
		t.Errorf("run = %+v, %v", run, ok)
	}
	if got := cat.Providers(); len(got) != 2 || got[0] != "anthropic" {
		t.Errorf("Providers() = %v", got)
	}
	if _, ok := cat.Resource("nope"); ok {
		t.Errorf("nope is in the catalog")
	}
}
