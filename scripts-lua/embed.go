// Package scripts holds governor's Redis scripts. Each operation's script
// is head.lua (keys, time, and the values every script shares: record
// formats, the fencing-token floor), then the operation's own file with
// the shared helpers of the prelude (lib.lua and its parts, libFiles) in
// place of its --[[lib]] line, or before
// it when it has none; so the state layout and its invariants are written
// once, and an uncontended path written before the marker (from its
// --[[fast]] line) returns before the helpers are built. That fast path
// repeats what the helpers write, for speed; AcquireSlow and the others
// drop it, so that tests can prove both ways leave the same state.
package scripts

import (
	"embed"
	"strings"
	"sync"
)

var (
	//go:embed head.lua
	head string
	//go:embed lib.lua lib-slow.lua lib-loss.lua lib-policy.lua lib-supersede.lua
	libFS embed.FS
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
	//go:embed many.lua
	many string
	//go:embed admin.lua
	admin string
	//go:embed quarantine.lua
	quarantine string
	//go:embed watchdog.lua
	watchdog string
	//go:embed capacity.lua
	capacityOp string
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
	RenewMany = sync.OnceValue(func() string { return function("renew_one", Renew()) + renewMany })
	// Many runs several acquires and releases in one call, each as
	// Acquire or Release would (many.lua).
	Many = sync.OnceValue(func() string {
		return "local batch_time = redis.call('TIME')\n" + function("acquire_one", sharedTime(Acquire())) +
			function("release_one", sharedTime(Release())) + many
	})
	// Admin runs the admin actions (Withdraw, SetPaused, SetLimit).
	Admin = lazy(admin)
	// Quarantine holds new grants back on evidence of lost data found
	// outside a script (an eviction).
	Quarantine = lazy(quarantine)
	// Watchdog records what a run's watchdog did to a lease's tree.
	Watchdog = lazy(watchdog)
	// Capacity refreshes or releases a capacity lease; it takes a
	// seventh key, the resource's capacity hash.
	Capacity = sync.OnceValue(func() string { return compose(withFairShare(capacityOp)) })
)

// libFiles are the prelude's parts, in the order they are put together:
// the state and its helpers, the contended paths and limits, lost data,
// queue policies, supersede.
var libFiles = []string{"lib.lua", "lib-slow.lua", "lib-loss.lua", "lib-policy.lua", "lib-supersede.lua"}

// lib is the prelude, put together at its first use.
var lib = sync.OnceValue(func() string {
	var b strings.Builder
	for _, f := range libFiles {
		data, err := libFS.ReadFile(f)
		if err != nil {
			panic("scripts: " + err.Error()) // a name not embedded: TestPrelude
		}
		b.Write(data)
	}
	return b.String()
})

// libMarker is the line of an operation's file where the prelude goes.
const libMarker = "--[[lib]]\n"

// lazy returns compose(op), built once at its first call.
func lazy(op string) func() string {
	return sync.OnceValue(func() string { return compose(op) })
}

// timeCall is head.lua's line that reads the server's time.
const timeCall = "local t = redis.call('TIME')\n"

// sharedTime makes composed script src read the time of the call that
// runs it (batch_time, read once per call) instead of its own: the
// requests of one call run at one instant, atomically, so one time is
// theirs, and a TIME costs the server as much as a small command. It
// panics if src does not read the time as head.lua does (TestMany).
func sharedTime(src string) string {
	if strings.Count(src, timeCall) != 1 {
		panic("scripts: head.lua no longer reads the time with " + timeCall)
	}
	return strings.Replace(src, timeCall, "local t = batch_time\n", 1)
}

// function wraps script src in a Lua function name(KEYS, ARGV), for a
// script that runs it once per request it carries.
func function(name, src string) string {
	return "local function " + name + "(KEYS, ARGV)\n" + src + "\nend\n"
}

func compose(op string) string {
	if before, after, ok := strings.Cut(op, libMarker); ok {
		return head + before + lib() + after
	}
	return head + lib() + op
}
