package governor

import (
	"fmt"
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"
)

// Limits on names and numbers, checked before anything reaches a backend.
const (
	MaxNameLen  = 200       // bytes in a resource name
	MaxProject  = 64        // bytes in a project name
	MaxLimit    = 1_000_000 // slots in one resource
	MinTTL      = 100 * time.Millisecond
	MaxTTL      = 24 * time.Hour
	DefaultName = "default" // the project when none is given
)

// ValidateResource checks a resource name: 1 to MaxNameLen bytes of
// printable UTF-8 with no white space, and none of the characters
// { } * ? [ ] \ that Redis gives meaning to in keys and patterns.
func ValidateResource(name string) error {
	if err := validateName("resource", name, MaxNameLen); err != nil {
		return err
	}
	return nil
}

// ValidateProject checks a project name: 1 to MaxProject bytes of
// letters, digits, '.', '_' and '-'.
func ValidateProject(name string) error {
	if name == "" {
		return invalid("empty project name; allowed: 1 to %d of A-Z a-z 0-9 . _ -", MaxProject)
	}
	if len(name) > MaxProject {
		return invalid("project name of %d bytes; allowed: at most %d", len(name), MaxProject)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return invalid("project name %s has %q; allowed: A-Z a-z 0-9 . _ -", strconv.Quote(name), r)
		}
	}
	return nil
}

func validateName(what, name string, max int) error {
	if name == "" {
		return invalid("empty %s name", what)
	}
	if len(name) > max {
		return invalid("%s name of %d bytes (starting %s); allowed: at most %d bytes",
			what, len(name), strconv.Quote(truncate(name, 32)), max)
	}
	if !utf8.ValidString(name) {
		return invalid("%s name %s is not valid UTF-8", what, strconv.Quote(truncate(name, 64)))
	}
	for _, r := range name {
		switch {
		case unicode.IsSpace(r) || !unicode.IsPrint(r):
			return invalid("%s name %s contains %q; allowed: printable characters without white space",
				what, strconv.Quote(truncate(name, 64)), r)
		case r == '{' || r == '}' || r == '*' || r == '?' || r == '[' || r == ']' || r == '\\':
			return invalid("%s name %s contains %q; not allowed: { } * ? [ ] \\",
				what, strconv.Quote(truncate(name, 64)), r)
		}
	}
	return nil
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
	return checkTTL(d, TimingNames{TTL: what})
}
