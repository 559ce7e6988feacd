package governor

import "context"

// EventWatchdogKill: a run's watchdog stopped (TERM) or killed the
// command tree of a lease because its holder could not: governor was
// stopped past the lease's deadline, or died without releasing. The
// detail says why and what it did. It ends no lease.
const EventWatchdogKill = "watchdog_kill"

// WatchdogBackend records what a run's watchdog did.
type WatchdogBackend interface {
	// NoteWatchdogKill records an EventWatchdogKill on key naming lease
	// id (with token) and detail.
	NoteWatchdogKill(ctx context.Context, key Key, id string, token int64, detail string) error
}
