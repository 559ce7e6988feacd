package main

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// flagUsage is the help line of command path's flag name.
func flagUsage(t *testing.T, path []string, name string) string {
	t.Helper()
	c, _, err := (&app{}).rootCmd("").Find(path)
	if err != nil || c.Flags().Lookup(name) == nil {
		t.Fatalf("%v --%s: %v", path, name, err)
	}
	return c.Flags().Lookup(name).Usage
}

// Each claim a flag's help makes about the values it allows is what the
// parser does: the bounds are read from the help itself, and the value
// just outside is refused naming the flag, the bound itself is not.
func TestHelpClaimsMatchTheParser(t *testing.T) {
	tg := fileTarget(t, "")
	refusedNaming := func(flag string, args ...string) {
		t.Helper()
		if code, _, stderr := tg.run(t, args...); code != 125 || !strings.Contains(stderr, flag) {
			t.Errorf("%q: exit %d, %q; want 125 naming %s", args, code, stderr, flag)
		}
	}
	notRefusedFor := func(flag string, args ...string) {
		t.Helper()
		if _, _, stderr := tg.run(t, args...); strings.Contains(stderr, flag) {
			t.Errorf("%q: refused for %s although its help allows it: %q", args, flag, stderr)
		}
	}
	dur := func(s string) time.Duration {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("the help's bound %q: %v", s, err)
		}
		return d
	}

	// serve --resources-retention: "at least D".
	m := regexp.MustCompile(`at least (\S+?)\)`).FindStringSubmatch(flagUsage(t, []string{"serve"}, "resources-retention"))
	if m == nil {
		t.Fatal("serve --resources-retention's help states no least value")
	}
	least := dur(m[1])
	refusedNaming("--resources-retention", "serve", "--listen", "127.0.0.1:0", "--resources-retention", (least - time.Second).String())
	notRefusedFor("--resources-retention", "serve", "--listen", "bad address", "--resources-retention", least.String())

	// acquire --ttl: "D1 to D2".
	m = regexp.MustCompile(`lease time to live, (\S+) to (\S+?);`).FindStringSubmatch(flagUsage(t, []string{"acquire"}, "ttl"))
	if m == nil {
		t.Fatal("acquire --ttl's help states no range")
	}
	lo, hi := dur(m[1]), dur(m[2])
	refusedNaming("TTL", "acquire", "heavy", "--ttl", (lo - time.Millisecond).String())
	refusedNaming("TTL", "acquire", "heavy", "--ttl", (hi + time.Second).String())
	notRefusedFor("TTL", "acquire", "t1", "--ttl", hi.String())

	// run --backoff-exit-code: "(1-255)".
	if !strings.Contains(flagUsage(t, []string{"run"}, "backoff-exit-code"), "(1-255)") {
		t.Fatal("run --backoff-exit-code's help no longer says 1-255: update this test")
	}
	for _, v := range []string{"0", "256", "-1"} {
		refusedNaming("--backoff-exit-code", "run", "--provider", "p", "--limit", "1", "--backoff-exit-code", v, "--", "true")
	}
	notRefusedFor("--backoff-exit-code", "run", "--provider", "p", "--limit", "1", "--backoff-exit-code", "255", "--", "true")

	// events --since: "a positive duration".
	if !strings.Contains(flagUsage(t, []string{"events"}, "since"), "positive duration") {
		t.Fatal("events --since's help no longer says positive: update this test")
	}
	refusedNaming("--since", "events", "--since", "0s")
	notRefusedFor("--since", "events", "--since", "1ns")
}
