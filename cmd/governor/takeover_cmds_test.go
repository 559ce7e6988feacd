package main

import (
	"strings"
	"testing"
)

// TestTakeoverNothingToTakeOver: a lease that was released, or never
// existed, is not taken over: exit 73, "nothing to take over", and no
// lease is handed out.
func TestTakeoverNothingToTakeOver(t *testing.T) {
	backends(t, func(t *testing.T, g []string) {
		code, out, errs := cli(t, append(g, "acquire", "heavy", "--limit", "1", "--ttl", "1m")...)
		if code != 0 {
			t.Fatalf("acquire: exit %d, %s", code, errs)
		}
		lease := strings.Fields(out)[0]
		if code, _, errs := cli(t, append(g, "release", lease)...); code != 0 {
			t.Fatalf("release: exit %d, %s", code, errs)
		}
		for _, id := range []string{strings.TrimPrefix(lease, "heavy@"), "00112233445566778899aabbccddeeff"} {
			code, out, errs := cli(t, append(g, "takeover", "heavy", "--lease", id, "--limit", "1")...)
			if code != 73 || out != "" || !strings.Contains(errs, "nothing to take over") {
				t.Fatalf("takeover of released or unknown lease %s: exit %d, stdout %q, stderr %q; want 73, nothing to take over", id, code, out, errs)
			}
		}
		if code, out, errs := cli(t, append(g, "slots", "heavy", "--json")...); code != 0 || strings.Contains(out, `"lease_id"`) {
			t.Fatalf("after refused takeovers, slots: exit %d, %s %s; want no holder", code, out, errs)
		}
	})
}
