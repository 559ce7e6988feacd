// Package safetext makes text that came from another process safe to
// print on a terminal. Session names, hosts, commands, lease ids and event
// details are written by whoever shares the backend; printed raw, their
// escape sequences would move the cursor, clear the screen, retitle the
// window, hide text or reorder it (bidi overrides) in the reader's
// terminal.
//
// Every printer of such text (slots, busy and takeover messages, the
// status line, events) calls Escape on it, and only on it: governor's own
// terminal sequences (the status line, slots --watch) are not escaped.
// JSON output is data, not display; encoding/json escapes its control
// characters itself.
package safetext

import (
	"bytes"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Escape returns s with every character that a terminal could act on, or
// that changes how the text around it reads, written as a Go-style escape:
//
//   - C0 controls and DEL: \t, \n, \r, else \xHH (ESC is \x1b, BEL \x07),
//     so no line can be forged and no escape sequence (CSI, OSC, DCS) can
//     start;
//   - C1 controls (U+0080–U+009F, among them the one-character CSI and
//     OSC): \u009b;
//   - format characters (Unicode Cf: bidi embeddings, overrides and
//     isolates, zero-width characters, BOM, soft hyphen) and the line and
//     paragraph separators: \u202e;
//   - bytes that are not UTF-8: \xff.
//
// Other text, backslashes included, is returned unchanged.
func Escape(s string) string {
	i := 0
	for i < len(s) && s[i] >= 0x20 && s[i] < 0x7f {
		i++
	}
	if i == len(s) {
		return s // printable ASCII: the common case
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// unsafeRune reports whether r, a rune above ASCII, is a C1 control, a
// format character or a line or paragraph separator.
func unsafeRune(r rune) bool {
	return r >= 0x80 && r <= 0x9f || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp)
}

// JSON returns encoded JSON (as encoding/json writes it) with the
// characters Escape escapes above ASCII written as \uXXXX escapes, which
// decode to the same strings: encoding/json escapes the C0 controls but
// writes C1 controls and bidi overrides raw, and JSON is read on terminals
// too. Outside strings JSON is ASCII, so every such character is in a
// string.
func JSON(js []byte) []byte {
	i := 0
	for i < len(js) && js[i] < utf8.RuneSelf {
		i++
	}
	if i == len(js) {
		return js
	}
	var b bytes.Buffer
	b.Grow(len(js) + 16)
	b.Write(js[:i])
	for i < len(js) {
		r, size := utf8.DecodeRune(js[i:])
		if r >= utf8.RuneSelf && unsafeRune(r) {
			if r1, r2 := utf16.EncodeRune(r); r1 != utf8.RuneError {
				fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		} else {
			b.Write(js[i : i+size])
		}
		i += size
	}
	return b.Bytes()
}
