package backendkit_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/eventkind"
	"github.com/governor-dev/governor/governor/internal/backendkit"
)

// scripts is the Lua scripts' folder (the module's scripts-lua).
const scripts = "../../../scripts-lua"

// The constants the Lua scripts copy from Go, all of them: Lua name,
// then the Go value it must equal. A value changed on one side only, a
// name gone from the Lua, or a name defined twice fails
// TestLuaConstantsAgree. A literal that should be one of these is named
// in the Lua and listed here.
var (
	luaNumbers = map[string]int64{
		"HOLDS":        backendkit.HoldHistory,                   // head.lua: the ring of hold durations
		"IDLEN":        int64(len(governor.LeaseIDOf("secret"))), // head.lua: an id proven by its secret
		"MAX_EVENTS":   backendkit.MaxEvents,                     // lib-slow.lua: the events kept (XADD MAXLEN, XREVRANGE COUNT)
		"QUANT":        backendkit.PolicyQuant,                   // lib-policy.lua: the fair queueing quantum
		"SKIP":         backendkit.PolicySkip,                    // lib-policy.lua: how deep past a capped or blocked head
		"EAGER":        backendkit.EagerPasses,                   // lib-policy.lua: passes of one blocked head (eager)
		"OVERTAKES":    governor.DefaultMaxOvertakes,             // lib-policy.lua: max_overtakes when the policy says none
		"TOMBSTONE_MS": backendkit.Tombstone.Milliseconds(),      // head.lua: forget.lua's tombstone
	}
	luaSets = map[string][]string{
		"ENDED":          backendkit.EndedKinds, // lib-slow.lua: the events that end a lease
		"WITHDRAW_KINDS": eventkind.Withdraw,    // lib-slow.lua: the events that withdraw a waiter
	}
)

// luaLocal matches a top-level `local A, B = 1, 2` (names in capitals),
// its comment aside.
var luaLocal = regexp.MustCompile(`(?m)^local ([A-Z][A-Z0-9_]*(?:, *[A-Z][A-Z0-9_]*)*) = ([^\n]*?)(?: *--[^\n]*)?$`)

// luaConstants reads the top-level capitalised locals of the Lua files:
// name -> value as written.
func luaConstants(t *testing.T, files ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range luaLocal.FindAllStringSubmatch(string(src), -1) {
			names := strings.Split(m[1], ",")
			var values []string
			if strings.HasPrefix(m[2], "{") {
				values = []string{m[2]}
			} else {
				values = strings.Split(m[2], ",")
			}
			if len(values) != len(names) {
				continue // not a list of constants (a call, a table of several)
			}
			for i, n := range names {
				n = strings.TrimSpace(n)
				if _, dup := out[n]; dup {
					t.Errorf("%s: %s is defined twice", f, n)
				}
				out[n] = strings.TrimSpace(values[i])
			}
		}
	}
	return out
}

// luaSet reads a Lua set `{a = true, b = true}`.
func luaSet(v string) ([]string, bool) {
	body, ok := strings.CutPrefix(v, "{")
	if body, ok = strings.CutSuffix(body, "}"); !ok {
		return nil, false
	}
	var out []string
	for _, f := range strings.Split(body, ",") {
		k, ok := strings.CutSuffix(strings.TrimSpace(f), " = true")
		if !ok {
			return nil, false
		}
		out = append(out, k)
	}
	slices.Sort(out)
	return out, true
}

func TestLuaConstantsAgree(t *testing.T) {
	prelude, err := filepath.Glob(filepath.Join(scripts, "lib*.lua"))
	if err != nil || len(prelude) < 2 {
		t.Fatalf("the prelude's files: %v %v", prelude, err)
	}
	lua := luaConstants(t, append([]string{filepath.Join(scripts, "head.lua")}, prelude...)...)
	for name, want := range luaNumbers {
		v, ok := lua[name]
		if !ok {
			t.Errorf("head.lua and lib*.lua define no %s (want %d, as in Go)", name, want)
			continue
		}
		if got, err := strconv.ParseInt(v, 10, 64); err != nil || got != want {
			t.Errorf("Lua %s = %s; Go says %d: change both sides together", name, v, want)
		}
	}
	for name, goKinds := range luaSets {
		v, ok := lua[name]
		if !ok {
			t.Errorf("lib*.lua define no %s (want %v, as in Go)", name, goKinds)
			continue
		}
		want := slices.Sorted(slices.Values(goKinds))
		if got, ok := luaSet(v); !ok || !slices.Equal(got, want) {
			t.Errorf("Lua %s = %s; Go says %v: they must list the same kinds", name, v, want)
		}
	}
}
