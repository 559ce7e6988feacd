package config

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrInvalid is matched (errors.Is) by every *FieldError: the configuration
// is wrong and the user must fix it.
var ErrInvalid = errors.New("config: invalid configuration")

// FieldError is one problem with the configuration. Its message reads
//
//	FILE:LINE: KEY: MESSAGE       a value from the file
//	env VAR: KEY: MESSAGE         a value from the environment
//	flag --NAME: KEY: MESSAGE     a value from a flag ("flag" when the flag's name is unknown)
//	KEY: MESSAGE                  a default or a hand-built Config
//
// and MESSAGE names the bad value (Redis passwords redacted) and what is
// allowed.
type FieldError struct {
	File   string // the config file the bad value came from, "" if none
	Line   int    // 1-based line in File, 0 if unknown
	Origin string // for values not from the file: "env GOVERNOR_…", "flag --…"; else ""
	Key    string // dotted key, e.g. "lease.ttl"; "" for a problem with the whole file
	Value  string // the offending value as written, secrets redacted; "" if none
	Msg    string // what is wrong and what is allowed
}

func (e *FieldError) Error() string {
	var b strings.Builder
	switch {
	case e.File != "" && e.Line > 0:
		fmt.Fprintf(&b, "%s:%d: ", e.File, e.Line)
	case e.File != "":
		b.WriteString(e.File + ": ")
	case e.Origin != "":
		b.WriteString(e.Origin + ": ")
	}
	if e.Key != "" {
		b.WriteString(e.Key + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Unwrap makes errors.Is(err, ErrInvalid) true.
func (e *FieldError) Unwrap() error { return ErrInvalid }

// joinProblems returns nil for no problems, else all of them joined, those
// from the file first in line order so that `config check` reads like the
// file.
func joinProblems(problems []*FieldError) error {
	if len(problems) == 0 {
		return nil
	}
	slices.SortStableFunc(problems, func(a, b *FieldError) int {
		ia, ib := a.File == "", b.File == ""
		if ia != ib {
			if ia {
				return 1
			}
			return -1
		}
		return cmp.Compare(a.Line, b.Line)
	})
	errs := make([]error, len(problems))
	for i, p := range problems {
		errs[i] = p
	}
	return errors.Join(errs...)
}
