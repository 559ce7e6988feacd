package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// complete runs `governor __complete ARGS...` (what the shell scripts of
// `governor completion` run on <TAB>) and returns the candidates, without
// descriptions, and the directive line.
func complete(t *testing.T, args ...string) ([]string, string) {
	t.Helper()
	code, out, errs := cli(t, append([]string{"__complete"}, args...)...)
	if code != 0 {
		t.Fatalf("__complete %q: exit %d %s", args, code, errs)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	var got []string
	for _, l := range lines[:len(lines)-1] {
		got = append(got, strings.SplitN(l, "\t", 2)[0])
	}
	return got, lines[len(lines)-1]
}

// <TAB> completes flag values, resource names, lease handles and lease
// ids, and never offers files (exec-defaults.yaml) where a file makes no
// sense.
func TestCompletion(t *testing.T) {
	tg := fileTarget(t, "providers:\n  anthropic: {max_concurrency: 2}\nbudgets:\n  team-day: {limit: 2, unit: USD, per: 24h}\n  fleet: {limit: 9, unit: USD, per: 1h}\n")
	g := tg.global()
	code, out, errs := cli(t, append(g, "acquire", "gpu", "--limit", "1")...)
	if code != 0 {
		t.Fatalf("acquire: exit %d %s", code, errs)
	}
	// Completion offers the public RESOURCE@LEASE_ID (no secret: it
	// reads what 'slots' shows).
	id := leaseID(t, strings.Fields(out)[0])
	handle := "gpu@" + id
	const noFiles = ":4" // cobra.ShellCompDirectiveNoFileComp
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"acquire", "heavy", "--if-busy", ""}, []string{"fail", "wait", "skip"}},
		{[]string{"run", "--if-busy", ""}, []string{"fail", "wait", "skip"}},
		{[]string{"--backend", ""}, []string{"auto", "file", "redis"}},
		{[]string{"slots", ""}, []string{"gpu", "heavy", "provider:anthropic", "run", "run:join"}},
		{[]string{"slots", "heavy", ""}, []string{"gpu", "provider:anthropic", "run", "run:join"}},
		{[]string{"events", ""}, []string{"gpu", "heavy", "provider:anthropic", "run", "run:join"}},
		{[]string{"acquire", ""}, []string{"gpu", "heavy", "provider:anthropic", "run", "run:join"}},
		{[]string{"acquire", "heavy", ""}, nil},
		{[]string{"run", "--resource", ""}, []string{"gpu", "heavy", "provider:anthropic", "run", "run:join"}},
		{[]string{"run", "--provider", ""}, []string{"anthropic"}},
		{[]string{"run", "--budget", ""}, []string{"fleet", "team-day"}},
		{[]string{"budgets", ""}, []string{"fleet", "team-day"}},
		{[]string{"budget", ""}, []string{"fleet", "team-day"}},
		{[]string{"budget", "fleet", ""}, nil},
		{[]string{"release", ""}, []string{handle}},
		{[]string{"renew", ""}, []string{handle}},
		{[]string{"seq", "next", "v", "--lease", ""}, []string{handle}},
		{[]string{"takeover", "gpu", "--lease", ""}, []string{id}},
		{[]string{"acquire", "heavy", "--ttl", ""}, nil},
		{[]string{"slots", "--project", ""}, nil},
	} {
		got, directive := complete(t, append(append([]string{}, g...), tc.args...)...)
		if !slices.Equal(got, tc.want) || directive != noFiles {
			t.Errorf("governor %s <TAB>: %q %s; want %q and no files (%s)", strings.Join(tc.args, " "), got, directive, tc.want, noFiles)
		}
	}
	// Files are still offered where a file is meant.
	if _, directive := complete(t, "--config", ""); directive != ":0" {
		t.Errorf("--config <TAB>: directive %s, want the shell's file completion (:0)", directive)
	}
	// A backend that cannot be opened completes nothing, quietly.
	bad := []string{"--backend", "redis", "--redis-url", "redis://127.0.0.1:1/0", "--config", filepath.Join(t.TempDir(), "none.yaml")}
	if got, directive := complete(t, append(bad, "release", "")...); len(got) != 0 || directive != noFiles {
		t.Errorf("release <TAB> with Redis down: %q %s", got, directive)
	}
}
