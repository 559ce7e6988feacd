package mkdirslot

import (
	"fmt"
	"os"

	"github.com/governor-dev/governor/governor/proc"
)

// maxAncestors bounds the walk up the parent chain (a cycle cannot occur,
// but a pid reused mid-walk could send it anywhere).
const maxAncestors = 512

// HeldByAncestor reports whether DIR's slot is held by an ancestor of
// this process, as a non-empty HEAVY_LOCK_HELD (value) claims: slot.d's
// pid file must name a live process on the chain of parents from this
// process up (the wrapper's shell, or the process that made the slot).
// The value itself proves nothing, since any process can export it; it
// need not equal the pid either, because with-heavy-lock exports "1"
// rather than its pid. When not held by an ancestor, it returns why, in
// a sentence naming the variable, for the caller to say before taking the
// slot as usual; an unreadable DIR is such a reason too.
func HeldByAncestor(dir, value string) (bool, string) {
	if value == "" {
		return false, ""
	}
	h, err := Inspect(dir)
	switch {
	case err != nil:
		return false, fmt.Sprintf("%s=%s, but %v", EnvHeld, value, err)
	case h.State != Held:
		return false, fmt.Sprintf("%s=%s, but %s", EnvHeld, value, h.Describe())
	}
	if Descends(os.Getpid(), h.PID) {
		return true, ""
	}
	return false, fmt.Sprintf("%s=%s, but %s, which is not an ancestor of this process (a value exported earlier proves nothing)", EnvHeld, value, h.Describe())
}

// Descends reports whether process ancestor is on the chain of parents of
// process pid (not pid itself), as this host's process table shows it now.
func Descends(pid, ancestor int) bool {
	p := pid
	for range maxAncestors {
		s, err := proc.Stat(p)
		if err != nil || s.PPID <= 0 || s.PPID == p {
			return false
		}
		if p = s.PPID; p == ancestor {
			return true
		}
	}
	return false
}
