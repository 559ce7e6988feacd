package main

import (
	"strings"
	"testing"
)

// seq next has one rule for its refusals (issue 25.4): a lease no longer
// held, taken over included, exits 122 as renew and run do; a lease still
// held whose token is older than one the sequence already saw exits 73,
// and does not claim it was taken over.
func TestSeqNextExitCodes(t *testing.T) {
	g := fileGlobal(t, "project: p\n")
	acquire := func(resource string) string {
		t.Helper()
		code, out, errs := cli(t, append(g, "acquire", resource, "--limit", "1", "--ttl", "10m")...)
		if code != 0 {
			t.Fatalf("acquire %s: exit %d, %s", resource, code, errs)
		}
		return strings.Fields(out)[0]
	}
	older, newer := acquire("a"), acquire("b")
	seq := func(handle string) (int, string, string) {
		return cli(t, append(g, "seq", "next", "v", "--lease", handle)...)
	}
	if code, out, errs := seq(newer); code != 0 || strings.TrimSpace(out) != "1" {
		t.Fatalf("seq next with the newer lease: exit %d, %q, %s; want 1", code, out, errs)
	}
	code, _, errs := seq(older)
	if code != 73 || strings.Contains(errs, "taken over") || !strings.Contains(errs, "a newer lease's token already used v") {
		t.Errorf("seq next with a held lease of another resource and an older token: exit %d, %s; want 73, not 'taken over'", code, errs)
	}
	if code, _, errs := cli(t, append(g, "takeover", "b", "--lease", leaseID(t, newer), "--force")...); code != 0 {
		t.Fatalf("takeover b: exit %d, %s", code, errs)
	}
	code, _, errs = seq(newer)
	if code != 122 || !strings.Contains(errs, "is not held (expired, released or taken over)") {
		t.Errorf("seq next with a taken-over lease: exit %d, %s; want 122 (lease lost, as renew)", code, errs)
	}
	code, _, errs = cli(t, append(g, "renew", newer)...)
	if code != 122 {
		t.Errorf("renew of the taken-over lease: exit %d, %s; want 122, the same rule", code, errs)
	}
}
