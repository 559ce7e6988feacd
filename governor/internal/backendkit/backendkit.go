// Package backendkit is what both backends (governor/filebackend,
// governor/redisbackend) share beside the contract (governor.Backend):
// the bounds and constants they keep alike (the Lua scripts copy them:
// scripts-lua's constants test), and helpers that word what they record.
// The library's users never need them.
package backendkit

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/eventkind"
	"github.com/governor-dev/governor/governor/proc"
	"github.com/governor-dev/governor/governor/safetext"
)

// The fair queue's constants (governor.Policy, lib-policy.lua).
const (
	// PolicySkip is how deep the queue looks past a head whose fair key
	// is at FairCap, or (Eager) that does not fit.
	PolicySkip = 8
	// EagerPasses bounds how often lighter waiters pass one blocked head
	// under the eager policy.
	EagerPasses = 8
	// PolicyQuant is the fair queueing quantum: a waiter's tag is
	// max(class virtual time, its key's last tag) + PolicyQuant / its
	// key's weight, in integers (720720 is divisible by every weight up
	// to 16 and by many more).
	PolicyQuant = 720720
)

// HoldHistory is how many recent hold durations a backend keeps per
// resource (governor.Status.Holds).
const HoldHistory = 50

// RefusalHolders caps the holders a refusal's status lists, on every
// backend.
const RefusalHolders = 16

// MaxEvents bounds the events a backend keeps per resource; older ones
// are dropped.
const MaxEvents = 1000

// MaxBudgetEvents is how many budget events a project keeps
// (governor.BudgetBackend.BudgetEvents).
const MaxBudgetEvents = 200

// Tombstone is how long a Redis backend remembers that it forgot a
// resource, so that a machine that witnessed its state (a process's
// grant there) finds it forgotten, not lost (see redisbackend.Witness);
// WitnessKeep is how long a machine keeps such a witness unrenewed,
// well within it.
const (
	Tombstone   = 30 * 24 * time.Hour
	WitnessKeep = 14 * 24 * time.Hour
)

// EndedKinds are the event kinds that end a lease its holder did not
// release: a renewal of a lease that is gone reports the last such event
// naming it (a *governor.LeaseLostError), and a takeover of a lease that
// expired or was reclaimed finds it. lib-slow.lua's ENDED lists the same
// kinds.
var EndedKinds = []string{eventkind.Takeover, eventkind.Reclaimed, eventkind.Expired, eventkind.CancelledInProgress}

// TakeoverDetail is the detail of the takeover event a backend records
// when req replaces a lease: who took it. The backend adds the new
// token (", token T"). governor.LeaseLostError.Reason shows it to the
// holder that lost the lease.
func TakeoverDetail(req governor.Request) string {
	d := req.Declaration
	host := "unknown host"
	if d.Host != "" {
		host = safetext.Escape(d.Host)
	}
	return fmt.Sprintf("taken over by session %s (%s on %s): lease %s", d.Session, d.Processes(), host, req.ID)
}

// BudgetInstant is the instant ms (Unix milliseconds) as
// governor.BudgetState keeps a window's bounds: the zero time for 0 (no
// window opened yet, or, in a read, the next window not opened: its
// bounds are the caller's to compute from the budget's BudgetWindow).
func BudgetInstant(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// OwnerDead tells whether decl, a governor.Declaration's JSON as a
// backend keeps it for a rate share (capacity.RateLease.Owner), names a
// process proven dead on this machine (OwnerVerdict); unreadable JSON
// proves nothing.
func OwnerDead(decl string) bool {
	var d governor.Declaration
	return json.Unmarshal([]byte(decl), &d) == nil && d.OwnerVerdict() == proc.Dead
}
