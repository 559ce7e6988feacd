package filebackend

import (
	"strings"
	"testing"
)

func TestEscape(t *testing.T) {
	long := strings.Repeat("語", 100)
	for _, c := range []struct{ in, want string }{
		{"heavy", "heavy"},
		{"provider:anthropic", "provider%3Aanthropic"},
		{"a/b", "a%2Fb"},
		{"a%2Fb", "a%252Fb"},
		{".hidden", "%2Ehidden"},
		{"..", "%2E."},
		{"v1.2", "v1.2"},
		{"é", "%C3%A9"},
		{long, ""}, // hashed
	} {
		got := escape(c.in)
		if c.in == long {
			if !strings.HasPrefix(got, hashPrefix) || len(got) != 65 {
				t.Errorf("escape(long) = %q, want a hash", got)
			}
			if _, ok := unescape(got); ok {
				t.Errorf("unescape of a hash succeeded")
			}
			continue
		}
		if got != c.want {
			t.Errorf("escape(%q) = %q, want %q", c.in, got, c.want)
		}
		if back, ok := unescape(got); !ok || back != c.in {
			t.Errorf("unescape(%q) = %q, %v; want %q", got, back, ok, c.in)
		}
	}
	for _, bad := range []string{"", "a%2fb", "a%2", "a%ZZ", "a:b", ".x", "#abc"} {
		if s, ok := unescape(bad); ok {
			t.Errorf("unescape(%q) = %q, want failure", bad, s)
		}
	}
}
