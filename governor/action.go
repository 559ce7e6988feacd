package governor

import "time"

// Action is a change to a resource that its holders' own calls do not
// make (Backend.Admin): an operator's, a provider's rate-limit signal, or
// a reclaim of a holder proven dead. Its Kind is the kind of the event it
// records, which names By and Detail:
//
//   - eventkind.Paused, eventkind.Resumed: pause or resume the resource; Changed
//     says whether it changed anything (pausing a paused resource does
//     not). A paused resource grants nothing new, by any path; resuming
//     hands the room to the head of the queue at once. A paused resource
//     is never forgotten (Forget).
//   - eventkind.Limit: Limit (1 to MaxLimit) becomes the limit in force, live,
//     overriding what processes ask for until cleared. Limit 0 clears
//     it: the limit in force goes back to Back (1 to MaxLimit) at once,
//     or, Back 0, to the one processes last asked for; without a live
//     limit a clear with Back changes nothing. Holders keep their
//     leases; raised, the room goes to the head of the queue at once;
//     lowered below the weight held, nothing is granted until the use
//     falls under it. A resource with a live limit is never forgotten.
//   - eventkind.CoolOff: pause new grants until now+For (backend time; 1ms to
//     MaxRetryAfter), after a provider's rate-limit signal (Detail: the
//     reason): no new grant of its slots (a Fail acquire is Refused, a
//     Wait acquire queues in FIFO order and is granted, in order, once
//     the cool-off ends) and no rate reservation of the rate key of the
//     same name (denied with RetryAfter the time left). Holders keep
//     their leases. A cool-off in force that ends later is kept, never
//     shortened. Until is the end of the cool-off in force.
//   - a kind of eventkind.Withdraw: withdraw the waiters IDs that are still
//     queued (others are skipped: granted meanwhile, gone, unknown),
//     recording for each an event naming it, and wake each: its next
//     Acquire is a *WithdrawnError naming By and Detail. IDs in the
//     result are those withdrawn, in queue order; the room the queue may
//     now have is handed on. Nothing changes for a key without state.
//   - eventkind.Reclaimed: remove holder IDs[0] if it still holds Token — its
//     owner is proven dead; Changed says whether it removed anything.
type Action struct {
	Kind   string
	By     string
	Detail string
	IDs    []string
	Token  int64
	Limit  int
	Back   int
	For    time.Duration
}

// ActionResult is what an Action did (see Action for each kind).
type ActionResult struct {
	Changed bool
	Until   time.Time
	IDs     []string
}
