package scripts

import (
	"strings"
	"testing"
)

// TestMany: many.lua carries acquire.lua and release.lua whole, reading
// the server's time once for the call, not once per request.
func TestMany(t *testing.T) {
	m := Many()
	if n := strings.Count(m, "redis.call('TIME')"); n != 1 {
		t.Errorf("many.lua reads the time %d times; want once", n)
	}
	for name, src := range map[string]string{"acquire": Acquire(), "release": Release()} {
		if !strings.Contains(m, sharedTime(src)) {
			t.Errorf("many.lua does not carry %s whole", name)
		}
	}
}
