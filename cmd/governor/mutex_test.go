package main

import (
	"strings"
	"testing"
)

// A resource with no limit anywhere is a mutex (limit 1), for run and
// acquire alike, and the view says so; a limit given before (--limit, or
// live by 'governor limit') keeps ruling over callers that give none.
func TestNoLimitIsMutex(t *testing.T) {
	t.Parallel()
	tg := fileTarget(t, "") // configures heavy alone
	code, out, stderr := tg.run(t, "acquire", "gpu")
	if code != 0 {
		t.Fatalf("acquire gpu with no limit anywhere: exit %d, %s; want a mutex", code, stderr)
	}
	handle := strings.Fields(out)[0]
	if code, _, stderr := tg.run(t, "run", "--resource", "gpu", "--", "true"); code != 73 {
		t.Fatalf("run beside the holder of a mutex: exit %d, %s; want 73 (busy)", code, stderr)
	}
	if code, _, stderr := tg.run(t, "release", handle); code != 0 {
		t.Fatalf("release: %d %s", code, stderr)
	}
	if code, _, stderr := tg.run(t, "run", "--resource", "gpu", "--", "true"); code != 0 {
		t.Fatalf("run --resource gpu with no limit anywhere: exit %d, %s", code, stderr)
	}

	// A limit asked before is stored with the resource and rules.
	if code, _, stderr := tg.run(t, "run", "--resource", "wide", "--limit", "2", "--", "true"); code != 0 {
		t.Fatalf("run --limit 2: %d %s", code, stderr)
	}
	for i := 0; i < 2; i++ {
		if code, _, stderr := tg.run(t, "acquire", "wide"); code != 0 {
			t.Fatalf("acquire %d of wide (limit 2 given before): exit %d, %s", i+1, code, stderr)
		}
	}
	// So does a live limit.
	if code, _, stderr := tg.run(t, "limit", "gpu", "2"); code != 0 {
		t.Fatalf("limit gpu 2: %d %s", code, stderr)
	}
	for i := 0; i < 2; i++ {
		if code, _, stderr := tg.run(t, "acquire", "gpu"); code != 0 {
			t.Fatalf("acquire %d of gpu (live limit 2): exit %d, %s", i+1, code, stderr)
		}
	}
}

// slots says what the limit of a resource the configuration does not
// name is.
func TestSlotsSaysNoLimitIsMutex(t *testing.T) {
	tg := fileTarget(t, "") // configures heavy alone
	if code, _, stderr := tg.run(t, "run", "--resource", "gpu", "--", "true"); code != 0 {
		t.Fatalf("run: %d %s", code, stderr)
	}
	if code, out, stderr := tg.run(t, "slots", "gpu"); code != 0 || !strings.Contains(out, "else 1: a mutex") {
		t.Fatalf("slots gpu: %d %q %s; want it to say a mutex", code, out, stderr)
	}
}
