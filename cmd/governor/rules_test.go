package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/filebackend"
	"github.com/governor-dev/governor/governor/lockorder"
	"github.com/governor-dev/governor/internal/view"
)

// fileGlobal is the global flags of a CLI on a fresh file backend and a
// config file holding cfg.
func fileGlobal(t *testing.T, cfg string) []string {
	t.Helper()
	p := configFile(t, cfg)
	return []string{"--backend", "file", "--dir", filepath.Join(t.TempDir(), "state"), "--config", p}
}

// Defect 1: a CLI lease does not heartbeat, so its --ttl is checked
// against nothing but the TTL range, whatever the configured heartbeat.
func TestAcquireShortTTL(t *testing.T) {
	for _, cfg := range []string{"project: p\n", "project: p\nlease: {ttl: 30s, heartbeat: 10s}\n"} {
		g := fileGlobal(t, cfg)
		for _, ttl := range []string{"5s", "10s", "11s", "200ms"} {
			code, out, errs := cli(t, append(g, "acquire", "r"+ttl, "--limit", "1", "--ttl", ttl)...)
			if code != 0 {
				t.Fatalf("%q: acquire --ttl %s: exit %d, %s", cfg, ttl, code, errs)
			}
			lease := strings.Fields(out)[0]
			if code, _, errs := cli(t, append(g, "takeover", "r"+ttl, "--lease", leaseID(t, lease), "--force", "--ttl", ttl)...); code != 0 {
				t.Fatalf("%q: takeover --ttl %s: exit %d, %s", cfg, ttl, code, errs)
			}
		}
		code, _, errs := cli(t, append(g, "acquire", "r", "--limit", "1", "--ttl", "50ms")...)
		if code != 125 || !strings.Contains(errs, "50ms is not allowed; the TTL must be from 100ms to 24h0m0s") {
			t.Fatalf("acquire --ttl 50ms: exit %d, %q", code, errs)
		}
	}
}

// `config check` and governor.New agree on every lease timing: both
// accept or both refuse, and a command that opens the Governor (slots)
// fails exactly when check does. Zero values are left out: in a file
// "0s" is an explicit value, in governor.Options zero means the default.
func TestConfigCheckAgreesWithNew(t *testing.T) {
	b, err := filebackend.New(t.TempDir(), filebackend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ms := time.Millisecond
	ttls := []time.Duration{-time.Second, 50 * ms, 99 * ms, 100 * ms, 300 * ms, 6 * time.Second, 30 * time.Second, 24 * time.Hour, 25 * time.Hour}
	hbs := []time.Duration{-time.Second, ms, 33 * ms, 79 * ms, 80 * ms, 4 * time.Second, 5 * time.Second, 10 * time.Second, 23 * time.Second, 24 * time.Second, 30 * time.Second}
	for _, ttl := range ttls {
		for _, hb := range hbs {
			cfg := fmt.Sprintf("project: p\nlease: {ttl: %v, heartbeat: %v}\n", ttl, hb)
			g := fileGlobal(t, cfg)
			check, _, checkErr := cli(t, append(g, "config", "check")...)
			slots, _, slotsErr := cli(t, append(g, "slots")...)
			_, newErr := governor.New(b, governor.Options{TTL: ttl, Heartbeat: hb}) // not closed: b is shared
			if (check == 0) != (newErr == nil) || (check == 0) != (slots == 0) {
				t.Errorf("ttl %v heartbeat %v: config check exit %d %q; slots exit %d %q; governor.New %v",
					ttl, hb, check, checkErr, slots, slotsErr, newErr)
			}
		}
	}
}

// Defect 11: every counter of governor.Counters is in slots --json.
func TestSlotsJSONHasEveryCounter(t *testing.T) {
	var c governor.Counters
	v := reflect.ValueOf(&c).Elem()
	for i := range v.NumField() {
		v.Field(i).SetInt(int64(100 + i))
	}
	got := map[int]bool{}
	for _, n := range view.Counters(c) {
		got[n] = true
	}
	for i := range v.NumField() {
		if !got[100+i] {
			t.Errorf("slots --json counters lack governor.Counters.%s", v.Type().Field(i).Name)
		}
	}
}

// Defect 11: --wait-timeout means the same for acquire and run: alone it
// implies waiting; with --if-busy fail or skip it is refused.
func TestWaitTimeoutOneMeaning(t *testing.T) {
	g := fileGlobal(t, "project: p\n")
	if code, _, errs := cli(t, append(g, "acquire", "r", "--limit", "1", "--ttl", "1m")...); code != 0 {
		t.Fatalf("acquire: exit %d, %s", code, errs)
	}
	commands := map[string]func(flags ...string) []string{
		"acquire": func(flags ...string) []string { return append([]string{"acquire", "r", "--limit", "1"}, flags...) },
		"run": func(flags ...string) []string {
			return append(append([]string{"run", "--resource", "r", "--limit", "1"}, flags...), "--", "true")
		},
	}
	for name, command := range commands {
		code, _, errs := cli(t, append(g, command("--wait-timeout", "300ms")...)...)
		if code != 73 || !strings.Contains(errs, "not acquired within --wait-timeout 300ms") {
			t.Errorf("%s --wait-timeout 300ms: exit %d, %q; want 73 after waiting 300ms", name, code, errs)
		}
		for _, policy := range []string{"fail", "skip"} {
			code, _, errs := cli(t, append(g, command("--wait-timeout", "300ms", "--if-busy", policy)...)...)
			if code != 125 || !strings.Contains(errs, "--wait-timeout bounds a wait") {
				t.Errorf("%s --if-busy %s --wait-timeout: exit %d, %q; want 125", name, policy, code, errs)
			}
		}
	}
}

// Defect 12: a --limit that is not the limit in force is said at once on
// stderr (and in acquire's --json), naming the limit in force and where
// it comes from.
func TestLimitNotApplied(t *testing.T) {
	g := fileGlobal(t, "project: p\nresources:\n  heavy: {limit: 2}\n")
	cfg := g[len(g)-1]

	code, out, errs := cli(t, append(g, "--json", "acquire", "heavy", "--limit", "3")...)
	want := "heavy: --limit 3 is not applied: the limit in force is 2, from resources.heavy.limit in " + cfg + ":3"
	if code != 0 || !strings.Contains(errs, want) {
		t.Fatalf("acquire --limit 3 of a configured limit 2: exit %d, stderr %q; want %q", code, errs, want)
	}
	var js struct {
		Note *struct {
			InForce int    `json:"limit_in_force"`
			Asked   int    `json:"limit_asked"`
			Source  string `json:"limit_source"`
		} `json:"limit_note"`
	}
	if err := json.Unmarshal([]byte(out), &js); err != nil || js.Note == nil || js.Note.InForce != 2 || js.Note.Asked != 3 || !strings.Contains(js.Note.Source, cfg) {
		t.Fatalf("acquire --json: %v, %s", err, out)
	}
	code, _, errs = cli(t, append(g, "run", "--resource", "heavy", "--limit", "3", "--", "true")...)
	if code != 0 || !strings.Contains(errs, want) {
		t.Fatalf("run --limit 3 of a configured limit 2: exit %d, stderr %q; want %q", code, errs, want)
	}

	// The backend's limit wins while the resource is in use.
	if code, _, errs := cli(t, append(g, "acquire", "r", "--limit", "3", "--ttl", "1m")...); code != 0 {
		t.Fatalf("acquire: exit %d, %s", code, errs)
	}
	for _, cmd := range [][]string{{"acquire", "r", "--limit", "5"}, {"run", "--resource", "r", "--limit", "5", "--", "true"}} {
		code, _, errs := cli(t, append(g, cmd...)...)
		if code != 0 || !strings.Contains(errs, "r: --limit 5 is not applied: the limit in force is 3, from the backend: another process set it") {
			t.Errorf("%s --limit 5 of a resource in use with limit 3: exit %d, stderr %q", cmd[0], code, errs)
		}
	}
	if code, _, errs := cli(t, append(g, "acquire", "r", "--limit", "3")...); code != 0 || strings.Contains(errs, "not applied") {
		t.Errorf("acquire --limit 3, the limit in force: exit %d, stderr %q", code, errs)
	}
}

// `config check` and governor agree on names, limits and the lock order:
// what the configuration accepts, the Governor takes.
func TestConfigCheckAgreesOnNamesAndLimits(t *testing.T) {
	b, err := filebackend.New(t.TempDir(), filebackend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	type tc struct {
		cfg string
		gov error
	}
	var cases []tc
	for _, name := range []string{"heavy", "issue:2316", "a*b", "a?b", "a[b]", `a\\b`, "{a}", "ファイル", strings.Repeat("n", 200), strings.Repeat("n", 201)} {
		cases = append(cases, tc{fmt.Sprintf("resources:\n  %q: {limit: 1}\n", name), governor.ValidateResource(name)})
		cases = append(cases, tc{fmt.Sprintf("lock_order: [%q]\n", name), lockorder.Validate([]string{name})})
	}
	for _, p := range []string{"p", ".", "..", ".a", "a/b", strings.Repeat("p", 64), strings.Repeat("p", 65)} {
		_, err := governor.New(b, governor.Options{Project: p}) // not closed: b is shared
		cases = append(cases, tc{fmt.Sprintf("project: %q\n", p), err})
	}
	for _, n := range []int{-1, 0, 1, governor.MaxLimit, governor.MaxLimit + 1} {
		cases = append(cases, tc{fmt.Sprintf("resources: {r: {limit: %d}}\n", n), governor.ValidateLimit("r", n)})
	}
	_, err = governor.New(b, governor.Options{LockOrder: []string{"a", "a"}})
	cases = append(cases, tc{"lock_order: [a, a]\n", err})
	for _, c := range cases {
		cfg := c.cfg
		if !strings.HasPrefix(cfg, "project") {
			cfg = "project: p\n" + cfg
		}
		code, _, errs := cli(t, append(fileGlobal(t, cfg), "config", "check")...)
		if (code == 0) != (c.gov == nil) {
			t.Errorf("%q: config check exit %d %q; governor: %v", c.cfg, code, errs, c.gov)
		}
	}
}
