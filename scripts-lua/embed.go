// Package scripts holds governor's Redis scripts. Each operation's script
// is head.lua (keys, time, and the values every script shares: record
// formats, the fencing-token floor), then the operation's own file with
// the shared helpers of lib.lua in place of its --[[lib]] line, or before
// it when it has none; so the state layout and its invariants are written
// once, and an uncontended path written before the marker (from its
// --[[fast]] line) returns before the helpers are built. That fast path
// repeats what the helpers write, for speed; AcquireSlow and the others
// drop it, so that tests can prove both ways leave the same state.
package scripts

import (
	_ "embed"
	"strings"
	"sync"
)

var (
	//go:embed head.lua
	head string
	//go:embed lib.lua
	lib string
	//go:embed acquire.lua
	acquire string
	//go:embed renew.lua
	renew string
	//go:embed release.lua
	release string
	//go:embed cancel.lua
	cancel string
	//go:embed reclaim.lua
	reclaim string
	//go:embed lost.lua
	lost string
	//go:embed status.lua
	status string
	//go:embed takeover.lua
	takeover string
	//go:embed forget.lua
	forget string
	//go:embed cooloff.lua
	cooloff string
	//go:embed adapt.lua
	adapt string
	//go:embed note.lua
	note string
	//go:embed renewmany.lua
	renewMany string
	//go:embed admin.lua
	admin string
	//go:embed quarantine.lua
	quarantine string
	//go:embed watchdog.lua
	watchdog string
)

// The scripts, ready for redis.NewScript. All take the same six KEYS
// (see lib.lua). Each is built at its first call, not at package init:
// a process that runs none of them (the file backend's `governor run`)
// does not pay the ~0.9 MB of concatenation at its start.
var (
	Acquire  = lazy(acquire)
	Renew    = lazy(renew)
	Release  = lazy(release)
	Cancel   = lazy(cancel)
	Reclaim  = lazy(reclaim)
	Lost     = lazy(lost)
	Status   = lazy(status)
	Takeover = lazy(takeover)
	CoolOff  = lazy(cooloff)
	Adapt    = lazy(adapt)
	Note     = lazy(note)
	// Forget takes a seventh key, the resource's stats hash.
	Forget = lazy(forget)
	// RenewMany renews many leases, each as Renew would (renewmany.lua).
	RenewMany = sync.OnceValue(func() string {
		return "local function renew_one(KEYS, ARGV)\n" + Renew() + "\nend\n" + renewMany
	})
	// Admin runs the admin actions (Withdraw, SetPaused, SetLimit).
	Admin = lazy(admin)
	// Quarantine holds new grants back on evidence of lost data found
	// outside a script (an eviction).
	Quarantine = lazy(quarantine)
	// Watchdog records what a run's watchdog did to a lease's tree.
	Watchdog = lazy(watchdog)
)

// libMarker is the line of an operation's file where lib.lua goes.
const libMarker = "--[[lib]]\n"

// lazy returns compose(op), built once at its first call.
func lazy(op string) func() string {
	return sync.OnceValue(func() string { return compose(op) })
}

func compose(op string) string {
	if before, after, ok := strings.Cut(op, libMarker); ok {
		return head + before + lib + after
	}
	return head + lib + op
}
