// Package naming is what a name may be: a resource's, a project's, a
// lease id's, and why one is refused (an *Error with its Reason). Every
// name is checked by these rules before anything reaches a backend;
// governor wraps a refusal in governor.ErrInvalid, and config words it
// in its own terms. A leaf: it imports only the standard library and
// golang.org/x/text.
package naming

import (
	"fmt"
	"slices"
	"strconv"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Limits on names.
const (
	MaxNameLen = 200 // bytes in a resource name
	MaxProject = 64  // bytes in a project name
)

// Why a name is refused, in a *Error.
const (
	Empty       = "empty"
	TooLong     = "too long"
	NotUTF8     = "not UTF-8"
	Space       = "white space"
	Unprintable = "unprintable"
	Reserved    = "reserved character" // { } * ? [ ] \ in a resource, anything but A-Z a-z 0-9 . _ - in a project
	Dots        = "dots"               // a project "." or ".."
	NotNFC      = "not NFC"            // a name not in Unicode normal form C (Error.Want has it)
	MixedScript = "mixed scripts"      // letters of two of Latin, Greek, Cyrillic: look-alikes
)

// Error is a name the rules refuse (governor wraps it in
// governor.ErrInvalid). Its fields let a caller (config) say the same in
// its own words.
type Error struct {
	What   string // "resource", "project", "sequence"
	Name   string
	Reason string // Empty, TooLong, …
	Char   rune   // the refused character (Space, Unprintable, Reserved)
	Max    int    // the longest allowed, in bytes
	// Want is the name's NFC form (NotNFC): the one form accepted.
	Want string
	msg  string
}

func (e *Error) Error() string { return e.msg }

// CheckProject checks a project name: 1 to MaxProject bytes of
// letters, digits, '.', '_' and '-', and not "." or ".." (a project names
// a directory of the file backend). It returns nil or an *Error.
func CheckProject(name string) error {
	e := &Error{What: "project", Name: name, Max: MaxProject}
	switch {
	case name == "":
		e.Reason, e.msg = Empty, fmt.Sprintf("empty project name; allowed: 1 to %d of A-Z a-z 0-9 . _ -", MaxProject)
	case len(name) > MaxProject:
		e.Reason, e.msg = TooLong, fmt.Sprintf("project name of %d bytes; allowed: at most %d", len(name), MaxProject)
	case name == "." || name == "..":
		e.Reason, e.msg = Dots, fmt.Sprintf("project name %q; allowed: A-Z a-z 0-9 . _ -, but not \".\" or \"..\"", name)
	default:
		for _, r := range name {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
				e.Reason, e.Char = Reserved, r
				e.msg = fmt.Sprintf("project name %s has %q; allowed: A-Z a-z 0-9 . _ -", strconv.Quote(name), r)
				break
			}
		}
	}
	if e.Reason == "" {
		return nil
	}
	return e
}

// Check checks a name of what ("resource", "lease id", …): 1 to max
// bytes of printable UTF-8 with no white space, none of the characters
// { } * ? [ ] \ that Redis gives meaning to in keys and patterns, in
// Unicode NFC, without Latin, Greek and Cyrillic letters mixed. It
// returns nil or an *Error.
func Check(what, name string, max int) error {
	e := &Error{What: what, Name: name, Max: max}
	switch {
	case name == "":
		e.Reason, e.msg = Empty, fmt.Sprintf("empty %s name", what)
	case len(name) > max:
		e.Reason, e.msg = TooLong, fmt.Sprintf("%s name of %d bytes (starting %s); allowed: at most %d bytes",
			what, len(name), strconv.Quote(Truncate(name, 32)), max)
	case !utf8.ValidString(name):
		e.Reason, e.msg = NotUTF8, fmt.Sprintf("%s name %s is not valid UTF-8", what, strconv.Quote(Truncate(name, 64)))
	default:
		for _, r := range name {
			switch {
			case unicode.IsSpace(r) || !unicode.IsPrint(r):
				e.Reason, e.Char = Unprintable, r
				if unicode.IsSpace(r) {
					e.Reason = Space
				}
				e.msg = fmt.Sprintf("%s name %s contains %q; allowed: printable characters without white space",
					what, strconv.Quote(Truncate(name, 64)), r)
			case r == '{' || r == '}' || r == '*' || r == '?' || r == '[' || r == ']' || r == '\\':
				e.Reason, e.Char = Reserved, r
				e.msg = fmt.Sprintf("%s name %s contains %q; not allowed: { } * ? [ ] \\",
					what, strconv.Quote(Truncate(name, 64)), r)
			default:
				continue
			}
			break
		}
	}
	if e.Reason == "" {
		lookAlike(e)
	}
	if e.Reason == "" {
		return nil
	}
	return e
}

// lookAlike refuses what would make two names that look the same two
// slots: a name not in NFC ("café" written with a combining accent is
// another byte string than "café"), and letters mixed from Latin, Greek
// and Cyrillic, whose look-alikes ("hеavy" with a Cyrillic е) are the
// usual confusables. Refused, not normalised: the name a user types is
// the key, in records and events too, and a name changed on the way in
// would be a second rule at every entry point. Other scripts mix freely
// with Latin ("評価:eval").
func lookAlike(e *Error) {
	if nfc := norm.NFC.String(e.Name); nfc != e.Name {
		e.Reason, e.Want = NotNFC, nfc
		e.msg = fmt.Sprintf("%s name %s is not in Unicode normal form C; use %s, which looks the same (one name, one slot)",
			e.What, strconv.QuoteToASCII(Truncate(e.Name, 64)), strconv.Quote(Truncate(nfc, 64)))
		return
	}
	var seen []string
	for _, r := range e.Name {
		for _, sc := range confusableScripts {
			if unicode.Is(sc.table, r) && !slices.Contains(seen, sc.name) {
				seen = append(seen, sc.name)
			}
		}
		if len(seen) > 1 {
			e.Reason, e.Char = MixedScript, r
			e.msg = fmt.Sprintf("%s name %s mixes %s and %s letters (%q, %U); names that look alike must not be two slots: write it in one script",
				e.What, strconv.QuoteToASCII(Truncate(e.Name, 64)), seen[0], seen[1], r, r)
			return
		}
	}
}

// confusableScripts are the scripts whose letters look alike.
var confusableScripts = []struct {
	name  string
	table *unicode.RangeTable
}{{"Latin", unicode.Latin}, {"Greek", unicode.Greek}, {"Cyrillic", unicode.Cyrillic}}

// Truncate cuts s to at most n bytes, marked "…", to quote a refused
// name in a message.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
