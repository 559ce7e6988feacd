package scripts

import (
	"strings"
	"sync"
)

// fastMarker opens an operation's fast path; libMarker closes it.
const fastMarker = "--[[fast]]\n"

// Acquire, Renew and Release without their fast paths (the text between
// --[[fast]] and --[[lib]]): every call takes the way of lib.lua's
// helpers. They are for tests, which prove that both ways leave the same
// state; governor never runs them.
var (
	AcquireSlow = sync.OnceValue(func() string { return compose(withoutFast(acquire)) })
	RenewSlow   = sync.OnceValue(func() string { return compose(withoutFast(renew)) })
	ReleaseSlow = sync.OnceValue(func() string { return compose(withoutFast(release)) })
)

// withoutFast drops op's fast path; an op without the markers is
// returned whole (TestSlowDropsFastPath catches it).
func withoutFast(op string) string {
	before, rest, ok := strings.Cut(op, fastMarker)
	if !ok {
		return op
	}
	_, after, ok := strings.Cut(rest, libMarker)
	if !ok {
		return op
	}
	return before + libMarker + after
}
