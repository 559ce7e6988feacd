package safetext_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/governor-dev/governor/governor/safetext"
)

func TestEscape(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain", "host-1:4242 python eval.py --n 3", "host-1:4242 python eval.py --n 3"},
		{"empty", "", ""},
		{"unicode kept", "café 東京 héllo — ✓ 🚀", "café 東京 héllo — ✓ 🚀"},
		{"backslash kept", `C:\dir\x1b`, `C:\dir\x1b`},
		{"CSI clear screen", "a\x1b[2Jb", `a\x1b[2Jb`},
		{"OSC title with BEL", "\x1b]0;pwned\x07", `\x1b]0;pwned\x07`},
		{"OSC 8 hyperlink with ST", "\x1b]8;;http://evil\x1b\\click\x1b]8;;\x1b\\", `\x1b]8;;http://evil\x1b\click\x1b]8;;\x1b\`},
		{"DCS", "\x1bP1$qm\x1b\\", `\x1bP1$qm\x1b\`},
		{"newline forges a line", "s1\nfake holder", `s1\nfake holder`},
		{"carriage return overwrites", "safe\rEVIL", `safe\rEVIL`},
		{"tab", "a\tb", `a\tb`},
		{"NUL, backspace, DEL", "a\x00b\x08c\x7f", `a\x00b\x08c\x7f`},
		{"C1 CSI", "a\u009b2Jb", `a\u009b2Jb`},
		{"C1 OSC and NEL", "\u009d0;t\u009c\u0085", `\u009d0;t\u009c\u0085`},
		{"bidi override", "invoice\u202egpj.exe", `invoice\u202egpj.exe`},
		{"bidi isolates and marks", "\u2066a\u2069\u200f\u061c", `\u2066a\u2069\u200f\u061c`},
		{"zero width and BOM", "adm\u200bin\ufeff", `adm\u200bin\ufeff`},
		{"line separators", "a\u2028b\u2029c", `a\u2028b\u2029c`},
		{"invalid UTF-8", "a\xffb\xc3", `a\xffb\xc3`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := safetext.Escape(tt.in); got != tt.want {
				t.Errorf("Escape(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// Whatever goes in, what comes out is valid UTF-8 with no control or
// format character in it.
func FuzzEscape(f *testing.F) {
	f.Add("a\x1b[2J\u202e\xff\u009b")
	f.Fuzz(func(t *testing.T, s string) {
		got := safetext.Escape(s)
		if !utf8.ValidString(got) {
			t.Fatalf("Escape(%q) = %q: not UTF-8", s, got)
		}
		for _, r := range got {
			if unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp) {
				t.Fatalf("Escape(%q) = %q: holds %U", s, got, r)
			}
		}
	})
}

func TestJSON(t *testing.T) {
	in := map[string]string{"session": "a\u202eb\u009bc\x1b[2J\U000e0001 café\u2028"}
	js, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	got := safetext.JSON(js)
	for _, r := range string(got) {
		if r >= 0x80 && r != 'é' {
			t.Errorf("JSON left %U raw: %s", r, got)
		}
	}
	var back map[string]string
	if err := json.Unmarshal(got, &back); err != nil || back["session"] != in["session"] {
		t.Errorf("JSON(%s) = %s decodes to %q, %v; want the same data", js, got, back, err)
	}
	if plain := []byte(`{"a":"b"}`); &safetext.JSON(plain)[0] != &plain[0] {
		t.Error("JSON copied ASCII input")
	}
}

func ExampleEscape() {
	fmt.Println(safetext.Escape("evil\x1b]0;owned\x07\u202e"))
	// Output: evil\x1b]0;owned\x07\u202e
}

func BenchmarkEscape(b *testing.B) {
	for _, bc := range []struct{ name, s string }{
		{"ascii", "conductor-A box1:4242 eval run --api-key ***"},
		{"hostile", "evil\x1b]0;pwned\x07\u202eRTL\nFAKE"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				_ = safetext.Escape(bc.s)
			}
		})
	}
}
