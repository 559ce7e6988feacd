package governor

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/governor-dev/governor/governor/leasetiming"
	"golang.org/x/text/unicode/norm"
)

// Limits on names and numbers, checked before anything reaches a backend.
const (
	MaxNameLen  = 200       // bytes in a resource name
	MaxProject  = 64        // bytes in a project name
	MaxLimit    = 1_000_000 // slots in one resource
	DefaultName = "default" // the project when none is given
)

// Why a name is refused, in a *NameError.
const (
	NameEmpty       = "empty"
	NameTooLong     = "too long"
	NameNotUTF8     = "not UTF-8"
	NameSpace       = "white space"
	NameUnprintable = "unprintable"
	NameReserved    = "reserved character" // { } * ? [ ] \ in a resource, anything but A-Z a-z 0-9 . _ - in a project
	NameDots        = "dots"               // a project "." or ".."
	NameNotNFC      = "not NFC"            // a name not in Unicode normal form C (NameError.Want has it)
	NameMixedScript = "mixed scripts"      // letters of two of Latin, Greek, Cyrillic: look-alikes
)

// NameError is a name the rules refuse. errors.Is(err, ErrInvalid) is
// true. Its fields let a caller (config) say the same in its own words.
type NameError struct {
	What   string // "resource", "project", "sequence"
	Name   string
	Reason string // NameEmpty, NameTooLong, …
	Char   rune   // the refused character (NameSpace, NameUnprintable, NameReserved)
	Max    int    // the longest allowed, in bytes
	// Want is the name's NFC form (NameNotNFC): the one form accepted.
	Want string
	msg  string
}

func (e *NameError) Error() string { return ErrInvalid.Error() + ": " + e.msg }

// Unwrap makes errors.Is(err, ErrInvalid) true.
func (e *NameError) Unwrap() error { return ErrInvalid }

// ValidateResource checks a resource name: 1 to MaxNameLen bytes of
// printable UTF-8 with no white space, and none of the characters
// { } * ? [ ] \ that Redis gives meaning to in keys and patterns. It
// returns nil or a *NameError.
func ValidateResource(name string) error {
	if err := validateName("resource", name, MaxNameLen); err != nil {
		return err
	}
	return nil
}

// ValidateProject checks a project name: 1 to MaxProject bytes of
// letters, digits, '.', '_' and '-', and not "." or ".." (a project names
// a directory of the file backend). It returns nil or a *NameError.
func ValidateProject(name string) error {
	e := &NameError{What: "project", Name: name, Max: MaxProject}
	switch {
	case name == "":
		e.Reason, e.msg = NameEmpty, fmt.Sprintf("empty project name; allowed: 1 to %d of A-Z a-z 0-9 . _ -", MaxProject)
	case len(name) > MaxProject:
		e.Reason, e.msg = NameTooLong, fmt.Sprintf("project name of %d bytes; allowed: at most %d", len(name), MaxProject)
	case name == "." || name == "..":
		e.Reason, e.msg = NameDots, fmt.Sprintf("project name %q; allowed: A-Z a-z 0-9 . _ -, but not \".\" or \"..\"", name)
	default:
		for _, r := range name {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
				e.Reason, e.Char = NameReserved, r
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

func validateName(what, name string, max int) error {
	e := &NameError{What: what, Name: name, Max: max}
	switch {
	case name == "":
		e.Reason, e.msg = NameEmpty, fmt.Sprintf("empty %s name", what)
	case len(name) > max:
		e.Reason, e.msg = NameTooLong, fmt.Sprintf("%s name of %d bytes (starting %s); allowed: at most %d bytes",
			what, len(name), strconv.Quote(truncate(name, 32)), max)
	case !utf8.ValidString(name):
		e.Reason, e.msg = NameNotUTF8, fmt.Sprintf("%s name %s is not valid UTF-8", what, strconv.Quote(truncate(name, 64)))
	default:
		for _, r := range name {
			switch {
			case unicode.IsSpace(r) || !unicode.IsPrint(r):
				e.Reason, e.Char = NameUnprintable, r
				if unicode.IsSpace(r) {
					e.Reason = NameSpace
				}
				e.msg = fmt.Sprintf("%s name %s contains %q; allowed: printable characters without white space",
					what, strconv.Quote(truncate(name, 64)), r)
			case r == '{' || r == '}' || r == '*' || r == '?' || r == '[' || r == ']' || r == '\\':
				e.Reason, e.Char = NameReserved, r
				e.msg = fmt.Sprintf("%s name %s contains %q; not allowed: { } * ? [ ] \\",
					what, strconv.Quote(truncate(name, 64)), r)
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
func lookAlike(e *NameError) {
	if nfc := norm.NFC.String(e.Name); nfc != e.Name {
		e.Reason, e.Want = NameNotNFC, nfc
		e.msg = fmt.Sprintf("%s name %s is not in Unicode normal form C; use %s, which looks the same (one name, one slot)",
			e.What, strconv.QuoteToASCII(truncate(e.Name, 64)), strconv.Quote(truncate(nfc, 64)))
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
			e.Reason, e.Char = NameMixedScript, r
			e.msg = fmt.Sprintf("%s name %s mixes %s and %s letters (%q, %U); names that look alike must not be two slots: write it in one script",
				e.What, strconv.QuoteToASCII(truncate(e.Name, 64)), seen[0], seen[1], r, r)
			return
		}
	}
}

// confusableScripts are the scripts whose letters look alike.
var confusableScripts = []struct {
	name  string
	table *unicode.RangeTable
}{{"Latin", unicode.Latin}, {"Greek", unicode.Greek}, {"Cyrillic", unicode.Cyrillic}}

// LockOrderError is one bad entry of Options.LockOrder. errors.Is(err,
// ErrInvalid) is true.
type LockOrderError struct {
	Index int
	Entry string
	First int   // for an entry listed twice, the index of its first listing; else -1
	Err   error // for an entry that is not a valid resource name, its *NameError; else nil
}

func (e *LockOrderError) Error() string {
	switch {
	case e.Entry == "":
		return fmt.Sprintf("%v: lock order entry %d is empty; entries are resource-name prefixes such as issue", ErrInvalid, e.Index)
	case e.First >= 0:
		return fmt.Sprintf("%v: lock order entry %d %q is listed twice (also entry %d); each prefix must appear once", ErrInvalid, e.Index, e.Entry, e.First)
	}
	return fmt.Sprintf("lock order entry %d: %v", e.Index, e.Err)
}

// Unwrap makes errors.Is(err, ErrInvalid) true.
func (e *LockOrderError) Unwrap() error { return ErrInvalid }

// ValidateLockOrder checks Options.LockOrder: every entry a valid
// resource name (a prefix of resource names), each listed once. It
// returns nil or every bad entry's *LockOrderError, joined.
func ValidateLockOrder(order []string) error {
	var errs []error
	first := map[string]int{}
	for i, p := range order {
		e := &LockOrderError{Index: i, Entry: p, First: -1}
		if j, dup := first[p]; dup {
			e.First = j
		} else {
			first[p] = i
			if p != "" {
				e.Err = ValidateResource(p)
			}
		}
		if p == "" || e.First >= 0 || e.Err != nil {
			errs = append(errs, e)
		}
	}
	return errors.Join(errs...)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// ValidateLimit checks the limit of resource name: 1 to MaxLimit slots.
func ValidateLimit(name string, limit int) error {
	if limit < 1 || limit > MaxLimit {
		return invalid("limit %d for %s; allowed: 1 to %d", limit, name, MaxLimit)
	}
	return nil
}

// ResolveWeight returns the slots an acquire of resource takes: weight
// (0: 1), or the whole limit when exclusive. A weight above the limit is
// ErrTooHeavy; a weight below 1, or one other than the limit with
// exclusive, is ErrInvalid.
func ResolveWeight(resource string, weight, limit int, exclusive bool) (int, error) {
	if exclusive {
		if weight != 0 && weight != limit {
			return 0, invalid("weight %d with exclusive for %s; exclusive takes the whole limit (%d)", weight, resource, limit)
		}
		weight = limit
	}
	if weight == 0 {
		weight = 1
	}
	if err := validateWeight(resource, weight, limit); err != nil {
		return 0, err
	}
	return weight, nil
}

func validateWeight(name string, weight, limit int) error {
	if weight < 1 {
		return invalid("weight %d for %s; allowed: 1 to the limit (%d)", weight, name, limit)
	}
	if weight > limit {
		return fmt.Errorf("%w: weight %d for %s; allowed: 1 to the limit (%d)", ErrTooHeavy, weight, name, limit)
	}
	return nil
}

func validateTTL(what string, d time.Duration) error {
	return invalidTiming(leasetiming.CheckTTL(d, leasetiming.Names{TTL: what}))
}

// invalidTiming is a lease timing's refusal as an ErrInvalid (nil for nil).
func invalidTiming(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrInvalid, err)
}
