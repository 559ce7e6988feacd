// Package safetexttest checks, in tests, that output holds no text a
// terminal would act on.
package safetexttest

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// Hostile is a session name, host or command as a hostile process would
// declare it: an OSC that retitles the window, a CSI that clears the
// screen, a C1 CSI, a bidi override, a forged line, a carriage return and
// a byte that is not UTF-8.
const Hostile = "evil\x1b]0;pwned\x07\x1b[2J\u009b31m\u202eRTL\nFAKE LINE\rOVER\xff"

// Check fails the test if out holds a control character other than
// newline (governor's own line breaks), a format character (bidi
// overrides, zero-width characters), a line separator or invalid UTF-8,
// or if any line of out starts with what Hostile puts after its newline.
func Check(t testing.TB, what, out string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Errorf("%s: not UTF-8: %q", what, out)
	}
	for _, r := range out {
		if r != '\n' && unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp) {
			t.Errorf("%s holds %U: %q", what, r, out)
			return
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "FAKE LINE") {
			t.Errorf("%s: a line was forged: %q", what, out)
		}
	}
}
