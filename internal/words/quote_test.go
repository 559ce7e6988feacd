package words

import "testing"

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{"issue:2316": "issue:2316", "a b": "'a b'", "it's": `'it'\''s'`, "": "''"} {
		if got := ShellQuote(in); got != want {
			t.Errorf("ShellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}
