package governor

import (
	"context"
	"strconv"
	"time"

	"github.com/governor-dev/governor/governor/capacity"
	"github.com/governor-dev/governor/governor/histogram"
)

// Key names one resource inside one project. Backends keep the state of
// different keys apart; two projects never share state.
type Key struct {
	Project  string
	Resource string
}

func (k Key) String() string { return k.Project + "/" + k.Resource }

// Declaration is what a holder or waiter says about itself. It is stored
// beside the lease and shown to anyone refused, so they can tell who holds
// the slot and whether it is still alive.
type Declaration struct {
	Session string `json:"session,omitempty"`
	Host    string `json:"host,omitempty"`
	// HostID identifies the kernel and PID namespace the process runs in.
	// PID liveness proofs are valid only between equal HostIDs.
	HostID string `json:"host_id,omitempty"`
	PID    int    `json:"pid,omitempty"`
	// StartTime is the process start time (proc.Info.Start: clock ticks
	// after boot on Linux, microseconds after the epoch on macOS); with
	// PID it names one process, immune to PID reuse.
	StartTime uint64 `json:"start,omitempty"`
	// Command is the holder's command line, secrets redacted.
	Command string `json:"cmd,omitempty"`
	// GovernorPID is the governor process that holds the lease for PID,
	// when PID is another process: `governor run` declares as PID its
	// watchdog, which outlives governor as long as the command's tree
	// does. Shown to people (see Processes); liveness proofs use PID.
	// 0 in records written before it existed.
	GovernorPID int `json:"gpid,omitempty"`
	// ProgressTimeout, when set, makes the lease stalled once no
	// progress mark (Backend.Renew with Renewal.Touch; the grant counts as the first) has
	// arrived for this long: its renewals and marks are then refused
	// (a *LeaseLostError of kind eventkind.Stalled), so its holder declares it
	// lost and stops the work, and its slot is freed only by its release
	// or its expiry, never earlier. 0: no progress is asked for.
	ProgressTimeout time.Duration `json:"pto,omitempty"`
	// GovernorStart is GovernorPID's start time (as StartTime): with
	// it, GovernorPID alive also proves the owner alive (see
	// OwnerVerdict). 0 in records written before it existed.
	GovernorStart uint64 `json:"gstart,omitempty"`
	// Cgroup is the directory of the cgroup v2 group of the holder's
	// command tree (`governor run`), and RunID the id its processes
	// carry in EnvRunIDs: on this host, a populated group or a process
	// carrying the id proves the owner alive although every declared
	// pid is dead (the tree outlived governor and its watchdog). Empty
	// in records written before they existed. Whoever reclaims the lease
	// once all of them are gone removes the empty group
	// (RemoveDeadCgroup).
	Cgroup string `json:"cgroup,omitempty"`
	RunID  string `json:"run,omitempty"`
	// Priority and FairKey are the class and fair key the acquire asked
	// for under a queue policy (see Policy), shown only: the backend
	// decides by Request's. Empty when none was asked for.
	Priority string `json:"prio,omitempty"`
	FairKey  string `json:"fair,omitempty"`
	// User is the OS user of the process (governor.New fills it in):
	// shown, and a cancel in progress of another user's holder is refused
	// unless Request.CancelOthers. Empty in records written before it
	// existed.
	User string `json:"user,omitempty"`
}

// Holder is one granted lease as the backend sees it.
type Holder struct {
	LeaseID string
	Weight  int
	Token   int64
	// AcquiredAt, Heartbeat and Expires are backend time (the Redis
	// server's clock, or this machine's).
	AcquiredAt time.Time
	Heartbeat  time.Time
	Expires    time.Time
	// Progress is the last progress mark (Renewal.Touch), or AcquiredAt
	// when the lease has a ProgressTimeout and none came yet; zero when
	// neither (backend time).
	Progress time.Time
	// Cancelled is when a newer acquire with its supersede key cancelled
	// it in progress (eventkind.CancelledInProgress): it is held until its
	// holder has stopped its work and released it, never renewed; zero
	// when it was not.
	Cancelled time.Time
	Declaration
}

// Waiter is one queued acquire, in FIFO order.
type Waiter struct {
	ID         string
	Weight     int
	EnqueuedAt time.Time
	Declaration
}

// Status is a resource's state, read without acquiring anything.
type Status struct {
	Key     Key
	Limit   int // the limit in force; 0 when the resource was never used
	Used    int // weight held by unexpired holders
	Holders []Holder
	Waiters []Waiter
	// Shares are the live capacity leases (package capacity), by ID:
	// what each wanted and had in use at its last refresh, and the
	// weight its holder has (among Holders; 0 while it has none).
	Shares []capacity.Lease
	// Queued is the queue's length where Waiters is not listed: an
	// acquire's reply reports the length only, so that a long queue costs
	// its waiters nothing (QueueLen gives the length either way).
	Queued int
	// DriftLimit is a limit some process asked for that differs from the
	// one in force (processes disagree on their configuration); 0 if none.
	DriftLimit int
	// Policy is the queue policy in force (the zero Policy: strict
	// FIFO), and DriftPolicy the encoded policy (Policy.Encode) some
	// process asked for that differs from it, "" if none.
	Policy      Policy
	DriftPolicy string
	Counters    Counters
	// Histograms are the backend-kept distributions of the resource, by
	// name (histogram.Wait); absent until the first observation.
	Histograms map[string]histogram.Histogram
	// CoolOff is the end of the resource's cool-off (an eventkind.CoolOff Action),
	// backend time; zero when none is in force. Only a Status the
	// backend read in full, or the Status of a Refused or Queued
	// Result, carries it.
	CoolOff time.Time
	// Quarantine is the end of a quarantine after lost data (the Redis
	// backend holds new grants back: see eventkind.Quarantine), backend
	// time; zero when none is in force. As CoolOff, in a full Status or
	// a Refused or Queued Result's.
	Quarantine time.Time
	// Adaptive is the adaptive concurrency state (Backend.Adapt), nil
	// when the resource is not adaptive; LastSignal the last rate-limit
	// signal (backend time; zero when none). Only a full Status.
	Adaptive   *AdaptiveState
	LastSignal time.Time
	// Now is the backend's clock when the status was read.
	Now time.Time
	// Paused is set while the resource is paused (Governor.Pause): it
	// grants nothing new; holders finish and waiters keep their place.
	Paused *Paused
	// LiveLimit is set while a limit set live (Governor.SetLimit) is in
	// force: then Limit is it, whatever processes ask for.
	LiveLimit *LiveLimit
	// Holds are the durations of the resource's last holds (at most
	// backendkit.HoldHistory; oldest first), measured by the backend from grant to
	// release, expiry, reclaim or takeover: what internal/view.ExpectedWait rests on.
	Holds []time.Duration
}

// Paused says since when and by whom a resource is paused.
type Paused struct {
	Since time.Time // backend clock
	By    string
}

// LiveLimit is a limit set live: the limit, who set it and when.
type LiveLimit struct {
	Limit int
	By    string
	At    time.Time // backend clock
}

// QueueLen is the number of waiters: Waiters listed, or Queued.
func (s Status) QueueLen() int { return max(len(s.Waiters), s.Queued) }

// Counters are kept by the backend so that short-lived processes count.
type Counters struct {
	Acquired        int64 // grants: immediate, after waiting, or by takeover
	Busy            int64 // fail-mode refusals
	Waited          int64 // acquires that had to queue
	Released        int64
	Lost            int64 // leases their holders declared lost
	ReclaimedExpiry int64 // holders removed because their lease expired
	ReclaimedDead   int64 // holders removed because their owner was proven dead
	Takeovers       int64 // holders replaced by a takeover
	// LocalGrants are the slots granted locally from capacity leases'
	// shares, as their refreshes report them (capacity.Ask's Granted,
	// counted by capacity.Ask.Tally): no acquire of the backend's.
	LocalGrants int64
}

// Event is something that happened to a lease that its holder did not
// do itself.
type Event struct {
	At      time.Time // backend clock
	Kind    string
	LeaseID string
	Token   int64
	// Detail says more: for a takeover, who took it ("session S lease
	// L token T"); for a reclaim, the reason.
	Detail string
	// By names who acted, for the admin actions' events; "" otherwise.
	By string
}

// Mode says what an acquire does when the resource has no room.
type Mode int

const (
	// Fail returns a *BusyError at once.
	Fail Mode = iota
	// Wait queues in FIFO order until granted or the context ends.
	Wait
)

// Request is one acquire as a backend executes it. The Governor fills
// every field; backends may assume it is valid.
type Request struct {
	Key Key
	ID  string // lease id; also the waiter id while queued
	// Secret proves ID (OwnerProven): a backend refuses a request whose
	// secret does not prove its ID with ErrNotOwner, changing nothing.
	Secret string
	Limit  int
	Weight int
	// Exclusive takes the whole limit in force at grant time, whatever
	// Weight says (it is Limit, for the checks made before the backend):
	// the backend resolves it in the atomic step that grants, so that a
	// limit set live, or one in force that differs from Limit (drift),
	// leaves nobody beside an exclusive holder and never makes it too
	// heavy.
	Exclusive bool
	TTL       time.Duration
	Mode      Mode
	// QueueTTL bounds how long a waiter entry lives without being
	// refreshed by another Acquire with the same ID: a dead waiter is
	// dropped after it and never blocks the queue.
	QueueTTL    time.Duration
	Declaration Declaration
	// Policy is the queue policy asked for (Policy.Encode; "" strict
	// FIFO), Priority the class named, FairKey the fair key. The policy
	// in force changes only while the resource is idle (as Limit).
	Policy   string
	Priority string
	FairKey  string
	// Supersede, when set, replaces an older waiter with the same key
	// (it is withdrawn: ErrSuperseded); with CancelInProgress, a holder
	// with the same key also loses its lease (eventkind.CancelledInProgress).
	Supersede        string
	CancelInProgress bool
	// CancelOthers lets CancelInProgress cancel a holder whose
	// Declaration.User is another than this request's (refused with
	// ErrInvalid otherwise, changing nothing).
	CancelOthers bool
	// Takeover, when set, names the lease this request replaces (see
	// Backend.Acquire).
	Takeover string
	// New is true when ID was never sent before, so it can be neither
	// queued nor granted yet: the backend may skip looking it up. Leave
	// it false when in doubt (a re-check, a retry after an error).
	New bool
	// Capacity, when set, makes the request a refresh (or release) of
	// capacity lease ID (package capacity, docs/capacity.md): the
	// backend gives it a share of the limit in force, kept as a holder of
	// weight Share.Held, by the rules of Backend.Acquire's doc. TTL is
	// the lease's length; Weight, Mode, QueueTTL, Exclusive, Policy and
	// the queue fields are not used.
	Capacity *capacity.Ask
}

// Outcome of a backend Acquire.
type Outcome int

const (
	Granted Outcome = iota + 1
	Refused         // Fail mode and no room (or waiters ahead)
	Queued          // Wait mode: enqueued or still queued
)

func (o Outcome) String() string {
	switch o {
	case Granted:
		return "granted"
	case Refused:
		return "refused"
	case Queued:
		return "queued"
	}
	return "outcome(" + strconv.Itoa(int(o)) + ")"
}

// Result is what a backend Acquire returns.
type Result struct {
	Outcome Outcome
	Token   int64     // Granted
	Expires time.Time // Granted: backend time
	// Limit is the limit in force at the grant (Granted): the one asked
	// for, or a live, adaptive or stored one that won over it
	// (Status tells which). 0 when the backend does not tell (a takeover).
	Limit int
	// Position is the 1-based place in the queue (Queued).
	Position int
	// Sent, when not zero (Granted), is a local time taken before the
	// call that made the grant was sent: a release of this process that
	// handed its weight to this waiter and told the backend so, which
	// then returns the grant without a round trip of its own. The
	// lease's local deadline counts from it, not from the Acquire.
	Sent time.Time
	// Status describes the resource when the outcome is not Granted. It
	// may list only the first holders of a crowded resource.
	Status Status
	// Share is a capacity lease's share (Request.Capacity), nil for
	// any other request. Its Outcome is Granted, Expires the lease's
	// expiry and Token its holder's fencing token (0 while it holds
	// nothing).
	Share *capacity.Share
}

// Backend is the contract every state store implements. Each method is
// atomic: it sees and leaves a consistent state, and a crash at any point
// loses nothing. Expired holders and waiters are pruned, and freed weight
// handed to the head of the queue, inside every state-changing call.
//
// Errors other than the sentinels of this package are transport or
// storage failures; a backend never reports them as busy.
//
// Backend is the required part: slots, their leases, queues, events and
// admin actions. The rest are optional capabilities a Governor detects,
// as database/sql detects a driver's: RateBackend (rate limits),
// BudgetBackend (spend budgets), BatchRenewer (many renewals in one
// call), LeaseProver (a proof of life beside the declared pids). Without
// one, what needs it is ErrInvalid naming the capability, and listings
// of it are empty. Both backends of this module implement them all, and
// the conformance suite runs each method on each.
type Backend interface {
	// Acquire grants req if its weight fits and no waiter is ahead of it.
	// If req.ID was queued and has since been granted (freed weight was
	// handed to it), Acquire returns that grant with its expiry extended
	// to now+TTL, or, when the release that handed it told this backend,
	// the grant as made then (Result.Sent says when). Otherwise a Fail request is Refused, and a Wait request
	// is queued at the tail (or, already queued, has its queue entry
	// refreshed). A weight above the limit in force is ErrTooHeavy. A
	// request (not New) whose queue entry was withdrawn (Admin) is a
	// *WithdrawnError naming who and why, and is not queued again.
	//
	// A request with Takeover set replaces holder req.Takeover by a new
	// lease req.ID with the same weight and a new, higher fencing token,
	// in one step: no one else can be granted the slot in between. It
	// records a takeover event. The caller decides whether the takeover
	// is allowed (owner dead, or forced). An old lease that is no longer
	// held but whose last recorded end is its expiry or a reclaim is
	// taken over as well: the new lease gets req.Weight if that fits
	// with no waiter queued (Refused with the Status otherwise), and the
	// takeover event is recorded as for a held one. Any other old lease
	// (released, taken over already, unknown) is ErrNotHeld and changes
	// nothing. A paused resource refuses the takeover of an ended lease
	// (new room) too.
	Acquire(ctx context.Context, req Request) (Result, error)

	// Renew extends held lease r.ID of r.Key to now+r.TTL (0: its own
	// TTL, as last granted or renewed) and returns the new expiry; with
	// r.Touch, it sets the lease's progress mark to now instead (see
	// Declaration.ProgressTimeout) and returns its expiry, which it does
	// not extend (a stalled lease: a *LeaseLostError of kind
	// eventkind.Stalled). It never re-acquires: a lease that is gone is ErrLeaseLost, a
	// *LeaseLostError when an event recorded what ended it (a takeover,
	// a reclaim, its expiry), or when it is stalled (eventkind.Stalled) or
	// cancelled in progress (eventkind.CancelledInProgress): such a lease
	// stays held, never renewed again, until released or expired.
	//
	// r.Token is the lease's fencing token as its holder knows it (0:
	// unknown). A lease that is gone from a resource without state, or
	// from a state born after token, outlived the state it was granted
	// in: evidence of lost data, on which a backend that can lose its
	// data (Redis) holds new grants back (eventkind.Quarantine) before it
	// reports the loss. A backend may know the tokens of the grants it
	// made itself; from another process, only r.Token tells.
	//
	// Renew, Release and Cancel (and Acquire, with Request.Secret) first
	// check that the secret proves the id (OwnerProven): if not, they
	// return ErrNotOwner and change nothing. The lease id is public.
	Renew(ctx context.Context, r Renewal) (time.Time, error)

	// Release frees a held lease and hands its weight to the queue. A
	// lease that is not held is ErrNotHeld and changes nothing.
	Release(ctx context.Context, key Key, id, secret string) error

	// Cancel withdraws a queued waiter. If it was granted in the meantime,
	// the grant is released. Cancelling an unknown id is not an error.
	Cancel(ctx context.Context, key Key, id, secret string) error

	// NextSeq returns the next number (from 1) of sequence name of
	// project, for a writer holding fencing token. A token lower than
	// the highest one already used for the sequence is ErrStaleToken,
	// and nothing changes; so numbers never repeat, even when a lease
	// was taken over and its old holder keeps writing.
	NextSeq(ctx context.Context, project, name string, token int64) (int64, error)

	// Events returns the resource's recorded events at or after since,
	// oldest first.
	Events(ctx context.Context, key Key, since time.Time) ([]Event, error)

	// Status reads a resource without changing it.
	Status(ctx context.Context, key Key) (Status, error)

	// Resources lists the resources of a project that have state.
	Resources(ctx context.Context, project string) ([]string, error)

	// Notify returns a channel that receives a value when waiter id of key
	// may have been granted, and a function to stop listening. Delivery is
	// best effort: waiters also re-check on a bounded timer. Setting it up
	// waits no longer than ctx allows (then the channel never fires).
	Notify(ctx context.Context, key Key, id string) (<-chan struct{}, func())

	// Admin does a on key (see Action): a pause or resume, a live limit
	// set or cleared, a cool-off, waiters withdrawn or a holder
	// reclaimed, each recording an event of kind a.Kind. The Governor
	// checks a.
	Admin(ctx context.Context, key Key, a Action) (ActionResult, error)

	// Record records e on key at the backend's now: what a process saw
	// that the backend cannot, of kind eventkind.Lost (holder e.LeaseID, with
	// e.Token, declared its lease lost: counted too; e.Detail the
	// reason), eventkind.Degraded (the end of a period a process ran calls
	// without the backend, BackendDown) or eventkind.WatchdogKill (what a
	// run's watchdog did to the tree of lease e.LeaseID). Another kind
	// is ErrInvalid.
	Record(ctx context.Context, key Key, e Event) error

	// Adapt takes one AIMD step of key's adaptive concurrency: a signal
	// halves the adaptive limit (not below Min), IncreaseEvery successes
	// in a row add one (not above Max); a resource not yet adaptive, or
	// adaptive under another Max, starts from Max. While no limit is set
	// live (Admin, eventkind.Limit), the adaptive limit is the limit in force for
	// processes asking for Max (no drift), and raising it hands room to
	// the queue at once. It returns the state after the step. The
	// Governor checks the request.
	Adapt(ctx context.Context, key Key, req AdaptRequest) (AdaptiveState, error)

	// Observe adds observations to histogram name (histogram.Wait) of key:
	// counts[i] more in bucket i of histogram.Bounds(name) (the last one,
	// index len(bounds), is +Inf), and sum more to their sum. The
	// Governor calls it with valid arguments; the backend keeps the
	// counts with the resource's state (see Status.Histograms). A
	// resource without state (forgotten since) takes none: no state is
	// created for them.
	Observe(ctx context.Context, key Key, name string, counts []int64, sum time.Duration) error

	// Forget removes everything the backend keeps of key's slots —
	// limit, fencing token, counters, events, histograms — once it has
	// been idle for at least retention, and reports whether it did. Idle
	// means no holder, no waiter and no live capacity lease (one that
	// wants nothing included), and no grant or enqueue since:
	// the first call that finds key idle marks it (a state change that
	// nothing else observes), and a later call that finds the same mark
	// at least retention old removes it, drops it from Resources, and
	// lets the next acquire start afresh. A resource whose last fencing
	// token does not lie behind the backend's clock in microseconds is
	// kept, so that tokens (floored by that clock) still only increase
	// after it is forgotten. Sequences (NextSeq) and rate limits are
	// never forgotten. A key without state is not an error.
	Forget(ctx context.Context, key Key, retention time.Duration) (bool, error)

	// Close releases the backend's own connections and files. Leases
	// still held are left to expire.
	Close() error
}
