// Package capacity is the allocator of capacity leases (docs/capacity.md):
// a process that takes many grants of one resource leases a share of its
// concurrency slots and grants locally up to it, with no round trip per
// grant, while its lease is valid on its own clock.
//
// A capacity lease rides on a backend's Acquire (governor.Request's
// Capacity): the request's ID and Secret name the lease, its TTL is the
// lease's length, its Limit the limit asked for, its Mode Fail. Each call
// refreshes the lease: it reports what the process wants and has in use,
// and gets its new share. The backend keeps a share as a holder of the
// resource whose weight is what the process may still use (Held), so that
// shares, the holders of single grants and the limit in force are counted
// together: shares never sum above the limit in force, a paused or
// quarantined resource grows no share, and a share whose lease expires is
// pruned as any lease is.
//
// The package names the request and its answer and computes the fair
// share (FairShare) that every backend applies; it imports nothing of
// governor, so that the contract can carry its types.
package capacity

import (
	"fmt"
	"sort"
	"time"
)

// Ask is a refresh of a capacity lease (governor.Request.Capacity).
type Ask struct {
	// Want is the slots the process wants now: in use plus queued. 0
	// gives the share back (with InUse 0, the lease ends: see Release).
	Want int
	// InUse is the slots the process has granted locally and not yet
	// ended. From sending the refresh until its answer, the process
	// grants no more than InUse: so that a share that shrinks is never
	// exceeded by a grant made while the answer was on its way.
	InUse int
	// Held is the share the process believes it holds (0: none). After a
	// loss of the backend's state, a lease that comes back with Held
	// gets up to it back, and nothing more, while the resource is in
	// quarantine (the learning mode: see Share.Learning).
	Held int
	// Token is the fencing token of the lease's last answer (0: none):
	// with it, a lease that finds its holder gone from a state born
	// after Token proves the state was lost (as governor.Renewal.Token).
	Token int64
	// Release, set with Want and InUse 0, ends the lease: its share and
	// its want are gone at once, and the room goes to the queue.
	Release bool
	// Granted is how many slots the process has granted locally from
	// this lease since it opened it: a running count, so that a refresh
	// retried, reordered or applied with its answer lost counts nothing
	// twice (see Tally). The backend adds the grants it had not counted
	// to the resource's governor.Counters.LocalGrants.
	Granted int64
}

// Share is the answer to an Ask (governor.Result.Share), on the
// backend's clock; the lease's expiry and token are the Result's.
type Share struct {
	// Share is how many slots the process may have in use, granted
	// locally, until the lease's expiry on its own clock.
	Share int
	// Held is the weight the backend counts for the process: Share, or
	// more while calls above a share that shrank are still in use
	// (InUse reported); they end on the process's side, and its next
	// refresh reports it.
	Held int
	// Entitled is the process's fair share of the capacity, given every
	// live lease's want (FairShare): Share grows towards it as room
	// frees, and shrinks to it at once.
	Entitled int
	// Waiting tells that others are entitled to more than they hold:
	// a process that has calls to end above its Share, or wants less
	// than it holds, refreshes as soon as they end instead of at its next
	// interval.
	Waiting bool
	// Learning, when not zero, is the end of the learning mode after a
	// loss of the backend's state (a quarantine): until then no share
	// grows, and a lease that comes back gets at most what it held.
	Learning time.Time
}

// Lease is one live capacity lease as a backend's status shows it
// (governor.Status's Shares).
type Lease struct {
	ID string
	// Want and InUse are what its process reported at its last refresh.
	Want, InUse int
	// Held is the weight its holder has (0: none yet).
	Held int
	// Expires is when its want ends unless refreshed (backend time).
	Expires time.Time
}

// Validate checks an Ask: the error names the bad value and what is
// allowed.
func (a Ask) Validate(limit int) error {
	switch {
	case a.Want < 0 || a.InUse < 0 || a.Held < 0:
		return fmt.Errorf("capacity: want %d, in use %d, held %d; allowed: 0 or more", a.Want, a.InUse, a.Held)
	case a.Want > limit || a.InUse > limit || a.Held > limit:
		return fmt.Errorf("capacity: want %d, in use %d, held %d; allowed: at most the limit %d", a.Want, a.InUse, a.Held, limit)
	case a.Release && (a.Want != 0 || a.InUse != 0):
		return fmt.Errorf("capacity: a release with want %d and in use %d; allowed: both 0", a.Want, a.InUse)
	case a.Token < 0:
		return fmt.Errorf("capacity: token %d; allowed: 0 or more", a.Token)
	case a.Granted < 0:
		return fmt.Errorf("capacity: granted %d; allowed: 0 or more", a.Granted)
	}
	return nil
}

// Tally is how a backend counts a refresh's local grants, given the
// Granted it kept from the lease's last refresh (kept false: it keeps
// none): add is what the resource's Counters.LocalGrants gains, keep the
// Granted to keep. Only grants above the count kept are added, and the
// count kept never goes down, so a refresh sent twice, or late, adds
// nothing twice. A lease the backend keeps no count of (new, expired
// unrefreshed, or lost with the backend's state) adds nothing and starts
// its count: the grants it made since its last answered refresh may go
// uncounted, never counted twice. A release adds what its lease's count
// lacks, and then its count is gone with its want.
func (a Ask) Tally(last int64, kept bool) (add, keep int64) {
	if !kept {
		return 0, a.Granted
	}
	return max(0, a.Granted-last), max(last, a.Granted)
}

// Wanter is one live capacity lease as FairShare sees it.
type Wanter struct {
	ID   string
	Want int
}

// Queue is the ID FairShare gives the queue of single grants, which
// competes for the capacity as one more lease (wanting it all) while
// anyone waits in it. It is not a valid lease id.
const Queue = "\x00queue"

// FairShare divides capacity among ws by max-min fairness, in whole
// slots: in the order of want (then ID), each gets the least of its want
// and an equal part of what those before it left; so a lease that wants
// less than an equal part gets all it wants, and the rest is split
// equally among the others (the last in order, wanting most, gets the
// remainder of the division). It returns each ID's part; the parts sum
// to at most capacity. Every backend computes shares with it (Lua:
// fair_share in scripts-lua/capacity.lua, the same steps).
//
// Max-min and not proportional share: proportional share gives more to
// whoever asks for more, so an inflated want is rewarded; the fleet
// simulation (go run ./bench/capacity) shows max-min fairer at the same
// or better utilisation (docs/capacity.md).
func FairShare(capacity int, ws []Wanter) map[string]int {
	sorted := append([]Wanter(nil), ws...)
	sort.Slice(sorted, func(i, j int) bool {
		if sorted[i].Want != sorted[j].Want {
			return sorted[i].Want < sorted[j].Want
		}
		return sorted[i].ID < sorted[j].ID
	})
	out := make(map[string]int, len(sorted))
	left := max(capacity, 0)
	for i, w := range sorted {
		part := min(max(w.Want, 0), left/(len(sorted)-i))
		out[w.ID] = part
		left -= part
	}
	return out
}

// State is what a backend knows of a lease when it refreshes it.
type State struct {
	// Entitled is the lease's part by FairShare; Held the weight its
	// holder has now (0: none); Free the room no holder has (limit in
	// force less weight held, at least 0).
	Entitled, Held, Free int
	// Blocked: no share grows now (someone waits in the queue, or
	// grants are held back: paused, cooling off, in quarantine).
	Blocked bool
	// Learning: the resource is in quarantine after lost data and the
	// lease's holder is gone: it may get back what it says it held.
	Learning bool
}

// Next is the lease's new share and the weight its holder then has, by
// the rules of governor.Backend's Acquire: a share shrinks to its
// entitlement at once and grows towards it by the room free unless
// Blocked; in the learning mode it comes back up to Ask.Held; the holder
// keeps, beyond the share, what is still in use of what it held.
func (a Ask) Next(s State) (share, held int) {
	switch {
	case s.Learning:
		share = min(a.Held, s.Held+s.Free)
	case s.Entitled <= s.Held || s.Blocked:
		share = min(s.Entitled, s.Held)
	default:
		share = min(s.Entitled, s.Held+s.Free)
	}
	return share, max(share, min(s.Held, a.InUse))
}
