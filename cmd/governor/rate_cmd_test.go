package main

import (
	"context"
	"strings"
	"testing"
)

// TestRunProviderRateBudget: each run --provider takes one request of the
// provider's budget; a spent budget is busy (73), skip (75), and names
// the retry time.
func TestRunProviderRateBudget(t *testing.T) {
	cfg := "providers:\n  anthropic:\n    max_concurrency: 2\n    requests_per_minute: 3\n    burst: 2\n    tokens_per_minute: 1000\n"
	runTargets(t, cfg, func(t *testing.T, tg *target) {
		for i := 0; i < 2; i++ {
			if code, _, errs := tg.run(t, "run", "--provider", "anthropic", "--tokens", "300", "--", "true"); code != 0 {
				t.Fatalf("run %d within the burst: exit %d %s", i, code, errs)
			}
		}
		code, _, errs := tg.run(t, "run", "--provider", "anthropic", "--", "true")
		if code != 73 || !strings.Contains(errs, "rate limit reached") || !strings.Contains(errs, "retry after") {
			t.Fatalf("over the burst: exit %d %q, want 73 naming the retry time", code, errs)
		}
		if code, _, _ := tg.run(t, "run", "--provider", "anthropic", "--if-busy", "skip", "--", "true"); code != 75 {
			t.Fatalf("over the burst with skip: exit %d, want 75", code)
		}
		// The refused runs left no slot behind.
		g := tg.governor(t)
		if st := tg.status(t, g, "provider:anthropic"); st.Used != 0 {
			t.Fatalf("slots left after rate refusals: %+v", st)
		}
		if code, _, errs := tg.run(t, "run", "--provider", "anthropic", "--tokens", "-1", "--", "true"); code != 125 || !strings.Contains(errs, "--tokens -1") {
			t.Fatalf("--tokens -1: exit %d %q", code, errs)
		}
	})
}

// TestRunRatesOnlyProvider: a provider with rates but no max_concurrency
// holds no slot; run --provider takes its budget only.
func TestRunRatesOnlyProvider(t *testing.T) {
	cfg := "providers:\n  openai:\n    requests_per_minute: 2\n    burst: 1\n"
	tg := fileTarget(t, cfg)
	if code, _, errs := tg.run(t, "run", "--provider", "openai", "--", "true"); code != 0 {
		t.Fatalf("first run: exit %d %s", code, errs)
	}
	if code, _, errs := tg.run(t, "run", "--provider", "openai", "--", "true"); code != 73 || !strings.Contains(errs, "rate limit reached") {
		t.Fatalf("second run within the minute: exit %d %q, want 73 rate limited", code, errs)
	}
	g := tg.governor(t)
	if names, err := g.Resources(context.Background()); err != nil || len(names) != 0 {
		t.Fatalf("a rates-only provider held slots: %v %v", names, err)
	}
}
