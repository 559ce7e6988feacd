// Package eventkind names the kinds of events the backends record: a
// resource's (governor.Event.Kind, in a bounded log per resource) and a
// spend budget's (governor.BudgetEvent.Kind). The Lua scripts write the
// same strings.
package eventkind

// A resource's events: what happened to a lease that its holder did not
// do itself, or an operator's action on the resource.
const (
	Expired   = "expired"   // a holder's lease expired and was removed
	Reclaimed = "reclaimed" // a holder's owner was proven dead; removed
	Takeover  = "takeover"  // a holder was replaced by a takeover
	Lost      = "lost"      // a holder declared its lease lost
	Drift     = "drift"     // a process asked for another limit or queue policy than the one in force
	// Queue policies' events (see governor.Policy): a waiter withdrawn
	// because it waited max_wait (MaxWait, by "policy") or because a
	// newer acquire with its supersede key replaced it (Superseded, by
	// the newer one's id) — both in Withdraw, so its acquire ends with a
	// *governor.WithdrawnError; and a holder whose lease a newer acquire
	// with its supersede key and cancel-in-progress cancelled
	// (CancelledInProgress), which its renewals report as a
	// *governor.LeaseLostError; it keeps its weight until released or
	// expired.
	MaxWait             = "max_wait"
	Superseded          = "superseded"
	CancelledInProgress = "cancelled_in_progress"
	// Stalled is the end a renewal or progress mark of a stalled lease
	// reports (see governor.Declaration.ProgressTimeout); the backend
	// does not record it: the holder's lost event does.
	Stalled = "stalled"
	// The backend found its state contradicting itself (see
	// docs/redis.md, "State that contradicts itself"):
	Dropped    = "dropped"    // a queue entry that did not read was dropped; its waiter is not served
	Unreadable = "unreadable" // an event that did not read, reported in its place by Events
	// Quarantine: the backend found the resource's data lost (Redis
	// restarted without persistence, a failover to a replica behind) and
	// holds new grants back for the longest lease TTL.
	Quarantine = "quarantine"
	// Admin actions (governor.Governor's Cancel, Pause, Resume,
	// SetLimit); the event's By names who acted:
	//
	// Cancelled: a waiter was withdrawn (LeaseID names it); its acquire
	// ends with a *governor.WithdrawnError of this kind. Kinds that
	// withdraw a waiter are listed in Withdraw.
	Cancelled = "cancelled"
	Paused    = "paused"  // the resource grants nothing new until resumed
	Resumed   = "resumed" // grants resumed; the queue was served at once
	// Limit: a live limit was set, or cleared (Detail says which and the
	// limit in force after it).
	Limit = "limit"
	// CoolOff: a rate-limit signal paused new grants (see
	// governor.Backend.Admin); the detail says who signalled and until
	// when.
	CoolOff = "cooloff"
	// WatchdogKill: a run's watchdog stopped (TERM) or killed the
	// command tree of a lease because its holder could not: governor was
	// stopped past the lease's deadline, or died without releasing. The
	// detail says why and what it did. It ends no lease.
	WatchdogKill = "watchdog_kill"
	// Degraded: a process ran a provider's calls without the backend
	// (governor.ProviderLimits.OnBackendDown open or local:N) and the
	// backend is back; the detail says who, for how long, and how many
	// calls it let through.
	Degraded = "degraded"
)

// Withdraw are the kinds that withdraw a waiter: a waiter whose queue
// entry is gone finds the last such event naming it and ends with a
// *governor.WithdrawnError (backends look only for these kinds; a queue
// policy that drops waiters adds its kind here and in lib-slow.lua's
// WITHDRAW_KINDS).
var Withdraw = []string{Cancelled, MaxWait, Superseded}

// A spend budget's events.
const (
	BudgetSoft      = "soft"      // the soft threshold was crossed
	BudgetExhausted = "exhausted" // a reservation was refused for lack of room
	BudgetOverrun   = "overrun"   // an actual above its estimate
	BudgetAbandoned = "abandoned" // a reservation counted at its estimate after its TTL
	BudgetHeld      = "held"      // evidence of lost data: the budget refuses
	BudgetAdmin     = "admin"     // an operator's action (Detail says which)
)
