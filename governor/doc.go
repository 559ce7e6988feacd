// Package governor decides, across processes and machines, how many things
// may run at once.
//
// A Governor hands out leases on named resources (slot sets with a limit).
// An acquire asks for a weight; it either fails at once with a *BusyError
// that names the current holders, or waits in FIFO order until the weight
// fits. A lease carries a fencing token that strictly increases per
// resource, renews itself in the background, and closes Done() when it can
// no longer prove it is held — judged on the holder's own monotonic clock,
// with a safety margin, before the backend could grant the slot to anyone
// else. The protected work must stop when Done() closes: a lease can be
// lost (a pause, a partition) and no library can prevent that.
//
// The state lives in a Backend: Redis (package redisbackend, atomic logic
// in Lua, time from the server) across machines, or the embedded file
// backend on one machine. Every backend passes the same conformance suite
// (package conformance).
package governor
