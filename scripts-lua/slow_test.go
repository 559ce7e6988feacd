package scripts

import (
	"strings"
	"testing"
)

// TestSlowDropsFastPath: each slow variant lacks its fast path and
// nothing else; the twin tests in redisbackend would pass vacuously
// otherwise.
func TestSlowDropsFastPath(t *testing.T) {
	for _, c := range []struct{ name, fast, slow string }{
		{"acquire", Acquire(), AcquireSlow()},
		{"renew", Renew(), RenewSlow()},
		{"release", Release(), ReleaseSlow()},
	} {
		if strings.Contains(c.slow, fastMarker) || !strings.Contains(c.fast, fastMarker) || len(c.slow) >= len(c.fast) {
			t.Errorf("%s: the slow variant did not drop a fast path marked %q", c.name, fastMarker)
		}
		if !strings.HasPrefix(c.slow, head) || !strings.Contains(c.slow, lib()) {
			t.Errorf("%s: the slow variant lost head.lua or lib.lua", c.name)
		}
	}
	for name, s := range map[string]string{"cancel": Cancel(), "reclaim": Reclaim(), "lost": Lost(),
		"status": Status(), "takeover": Takeover()} {
		if strings.Contains(s, fastMarker) {
			t.Errorf("%s has a fast path but no slow variant for the twin tests", name)
		}
	}
}

// TestPrelude: every file embedded for the prelude is put together, in
// libFiles' order, and nothing else is.
func TestPrelude(t *testing.T) {
	entries, err := libFS.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(libFiles) {
		t.Fatalf("embedded %d prelude files, libFiles names %d", len(entries), len(libFiles))
	}
	at := 0
	for _, f := range libFiles {
		data, err := libFS.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		i := strings.Index(lib()[at:], string(data))
		if i != 0 {
			t.Fatalf("%s is not next in the prelude", f)
		}
		at += len(data)
	}
}
