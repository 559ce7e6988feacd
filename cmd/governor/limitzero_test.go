package main

import (
	"strings"
	"testing"
)

// --limit 0 given is refused (125, naming the value and what is
// allowed), never taken for the flag's "not given": the soak's bad input
// found run and acquire exiting 0 with it.
func TestLimitZeroRefused(t *testing.T) {
	tg := fileTarget(t, "")
	for _, args := range [][]string{
		{"run", "--resource", "heavy", "--limit", "0", "--", "true"},
		{"acquire", "heavy", "--limit", "0"},
	} {
		code, _, stderr := tg.run(t, args...)
		if code != 125 || !strings.Contains(stderr, "--limit 0; allowed: 1 to") {
			t.Fatalf("%q: exit %d, stderr %q; want 125 naming --limit 0 and what is allowed", args, code, stderr)
		}
	}
	if st := tg.status(t, tg.governor(t), "heavy"); len(st.Holders) != 0 {
		t.Fatalf("holders after the refusals: %+v", st.Holders)
	}
}
