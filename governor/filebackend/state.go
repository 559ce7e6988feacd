package filebackend

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/capacity"
	"github.com/governor-dev/governor/governor/eventkind"
)

// ErrCorrupt is matched (errors.Is) by the error about a state file that
// does not parse or contradicts itself. The file is left as it was. It
// is a governor.ErrBackend: retrying cannot cure it.
var ErrCorrupt = fmt.Errorf("%w: file backend: corrupt state", governor.ErrBackend)

const stateVersion = 1

// state is one resource's state file. Instants are nanoseconds of the
// boot clock (see Options.Clock) of the boot named by Boot.
type state struct {
	Version  int               `json:"version"`
	Project  string            `json:"project"`
	Resource string            `json:"resource"`
	Boot     string            `json:"boot,omitempty"`
	Limit    int               `json:"limit"`
	Drift    int               `json:"drift,omitempty"`
	Token    int64             `json:"token"`
	Counters governor.Counters `json:"counters"`
	Holders  []holder          `json:"holders"`
	Waiters  []waiter          `json:"waiters"` // FIFO order
	// Events, oldest first, at most backendkit.MaxEvents.
	Events []event `json:"events,omitempty"`
	// Seq and SeqToken: the state of a sequence (a pseudo-resource named
	// seqPrefix+name): the last number given out and the highest token
	// it was given to.
	Seq      int64 `json:"seq,omitempty"`
	SeqToken int64 `json:"seq_token,omitempty"`
	// The state of a rate limit (a pseudo-resource named ratePrefix+name):
	// theoretical arrival times on the boot clock, and counters.
	RateRequests int64 `json:"rate_requests,omitempty"`
	RateTokens   int64 `json:"rate_tokens,omitempty"`
	RateAllowed  int64 `json:"rate_allowed,omitempty"`
	RateLimited  int64 `json:"rate_limited,omitempty"`
	RateShadow   int64 `json:"rate_shadow_denied,omitempty"`
	// The budget learned from the provider's responses (RateAdjustment.Learned):
	// what it still accepts, and until when (boot clock; 0: none).
	LearnedRequests      int64 `json:"learned_requests,omitempty"`
	LearnedRequestsUntil int64 `json:"learned_requests_until,omitempty"`
	LearnedTokens        int64 `json:"learned_tokens,omitempty"`
	LearnedTokensUntil   int64 `json:"learned_tokens_until,omitempty"`
	// The limits of the last reservation, for RateStatus.
	RateRequestsLimit governor.RateLimit `json:"rate_requests_limit,omitzero"`
	RateTokensLimit   governor.RateLimit `json:"rate_tokens_limit,omitzero"`
	// RateShares are the rate's shares of its requests, TokenShares of
	// its tokens (capacity.RateLeases, on the boot clock; nil: none ever).
	RateShares  *capacity.RateLeases `json:"rate_shares,omitempty"`
	TokenShares *capacity.RateLeases `json:"token_shares,omitempty"`
	// Budgets is the project's spend budgets (the pseudo-resource
	// budgetResource; budget.go), nil elsewhere.
	Budgets *budgetBook `json:"budgets,omitempty"`
	// Histograms of a state file written before the stats file (see
	// stats) took them: read by Status, added to, never written anew.
	Histograms map[string]*storedHistogram `json:"histograms,omitempty"`
	// Idle is Forget's mark: the resource was found idle then, with
	// this token and waited count.
	Idle *idleMark `json:"idle,omitempty"`
	// Paused and Live are the admin state (admin.go): the resource is
	// paused, and the limit set live.
	Paused *pauseMark `json:"paused,omitempty"`
	Live   *liveMark  `json:"live,omitempty"`
	// Holds are the last hold durations (ns), oldest first, at most
	// backendkit.HoldHistory.
	Holds []int64 `json:"holds,omitempty"`
	// The queue policy in force (governor.Policy.Encode), one asked for
	// that differs, and its state (see policy.go): per class, the
	// overtakes counted and the virtual time; per "class:key", the last
	// tag.
	Policy      string           `json:"policy,omitempty"`
	PolicyDrift string           `json:"policy_drift,omitempty"`
	Overtakes   []int            `json:"overtakes,omitempty"`
	VTime       []int64          `json:"vtime,omitempty"`
	KeyTags     map[string]int64 `json:"key_tags,omitempty"`
	// The last waiter and holder with each supersede key.
	SupersedeWaiters map[string]string `json:"supersede_waiters,omitempty"`
	SupersedeHolders map[string]string `json:"supersede_holders,omitempty"`
	// Policy eager: the blocked head last passed, and how often.
	EagerHead   string `json:"eager_head,omitempty"`
	EagerPasses int    `json:"eager_passes,omitempty"`
	// CoolOff is the end of the resource's cool-off (boot clock; see
	// cooloff.go), 0 when none; SignalAt the last rate-limit signal
	// (wall clock, Unix nanoseconds).
	CoolOff  int64 `json:"cool_off,omitempty"`
	SignalAt int64 `json:"signal_at,omitempty"`
	// Adaptive is the AIMD state (cooloff.go), nil when not adaptive.
	Adaptive *governor.AdaptiveState `json:"adaptive,omitempty"`
	// Wants are the capacity leases' wants (capacity.go), by lease id.
	Wants map[string]capWant `json:"wants,omitempty"`
}

// capWant is a capacity lease's want, live until Expires (boot clock).
type capWant struct {
	Want    int   `json:"want"`
	InUse   int   `json:"in_use,omitempty"`
	Expires int64 `json:"expires"`
	// Granted is the lease's count of local grants at its last refresh
	// (capacity.Ask.Tally).
	Granted int64 `json:"granted,omitempty"`
}

type pauseMark struct {
	Since int64  `json:"since"` // wall clock, Unix nanoseconds
	By    string `json:"by"`
}

type liveMark struct {
	Limit int    `json:"limit"`
	At    int64  `json:"at"` // wall clock, Unix nanoseconds
	By    string `json:"by"`
}

type storedHistogram struct {
	Counts []int64 `json:"counts"`
	Sum    int64   `json:"sum"` // ns
}

type idleMark struct {
	Token  int64 `json:"token"`
	Waited int64 `json:"waited"`
	Since  int64 `json:"since"` // boot clock, ns
}

type event struct {
	At     int64  `json:"at"` // wall clock, Unix nanoseconds
	Kind   string `json:"kind"`
	Lease  string `json:"lease"`
	Token  int64  `json:"token,omitempty"`
	Detail string `json:"detail,omitempty"`
	By     string `json:"by,omitempty"`
}

type holder struct {
	ID        string `json:"id"`
	Weight    int    `json:"weight"`
	Token     int64  `json:"token"`
	Acquired  int64  `json:"acquired"`
	Heartbeat int64  `json:"heartbeat"`
	Expires   int64  `json:"expires"`
	// Proof: the owner holds a shared flock on lease.ID while it lives.
	Proof bool `json:"proof,omitempty"`
	// Handed: granted to a waiter that has not claimed it yet; its
	// wake-up pipe tells whether it lives.
	Handed bool                 `json:"handed,omitempty"`
	Decl   governor.Declaration `json:"decl"`
	// Progress: the last progress mark (boot clock), 0 when none came.
	Progress int64 `json:"progress,omitempty"`
	// Class and Key: its class (index) and fair key under a policy.
	Class int    `json:"class,omitempty"`
	Key   string `json:"key,omitempty"`
	// Cancel: the event that cancelled it in progress (a newer acquire
	// with its supersede key and CancelInProgress); nil while it is not.
	// A cancelled lease keeps its weight until released, reclaimed or
	// expired, and is never renewed (lib-supersede.lua's cancel_holder).
	Cancel *event `json:"cancel,omitempty"`
}

// lastProgress is h's last progress mark, the grant counting as the
// first, or 0 when h has no progress timeout and no mark.
func (h *holder) lastProgress() int64 {
	if h.Progress == 0 && h.Decl.ProgressTimeout > 0 {
		return h.Acquired
	}
	return h.Progress
}

// refused is the error of a renewal or mark of h when it is cancelled
// in progress or stalled, else nil.
func (h *holder) refused(key governor.Key, now clockNow) error {
	if h.Cancel != nil {
		return &governor.LeaseLostError{Resource: key.Resource, LeaseID: h.ID, End: h.Cancel.public()}
	}
	return h.stalled(key, now)
}

// stalled is the error of a renewal or mark of h once no progress mark
// came for its progress timeout (see governor.Declaration), else nil.
func (h *holder) stalled(key governor.Key, now clockNow) error {
	pto := h.Decl.ProgressTimeout
	if pto <= 0 || now.boot < h.lastProgress()+int64(pto) {
		return nil
	}
	return &governor.LeaseLostError{Resource: key.Resource, LeaseID: h.ID, End: governor.Event{At: now.wall, Kind: eventkind.Stalled,
		LeaseID: h.ID, Token: h.Token, Detail: fmt.Sprintf("no progress mark for %v (progress timeout %v)",
			time.Duration(now.boot-h.lastProgress()).Round(time.Millisecond), pto)}}
}

type waiter struct {
	ID     string `json:"id"`
	Weight int    `json:"weight"`
	// Exclusive: it takes the limit in force when granted
	// (governor.Request.Exclusive); Weight follows it (weighExclusive).
	Exclusive bool                 `json:"exclusive,omitempty"`
	TTL       int64                `json:"ttl"` // of the lease it will be granted, ns
	Enqueued  int64                `json:"enqueued"`
	Expires   int64                `json:"expires"` // of the queue entry
	Decl      governor.Declaration `json:"decl"`
	// Class, Key and Tag: its class (index), fair key and tag under a
	// policy (see policy.go).
	Class int    `json:"class,omitempty"`
	Key   string `json:"key,omitempty"`
	Tag   int64  `json:"tag,omitempty"`
	// bad says why an entry of the file did not read as a waiter; begin
	// drops it (dropBadWaiters).
	bad string
}

// UnmarshalJSON reads a waiter; one that does not read is kept, marked
// bad, so that one bad queue entry is dropped rather than making the
// whole state unreadable.
func (w *waiter) UnmarshalJSON(data []byte) error {
	type plain waiter
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		var named struct{ ID string }
		_ = json.Unmarshal(data, &named) // its id, if that much reads
		*w = waiter{ID: named.ID, bad: fmt.Sprintf("%s: %v", clip(data), err)}
		return nil
	}
	*w = waiter(p)
	return nil
}

// UnmarshalJSON reads an event; one that does not read becomes an
// unreadable event saying why, in its place.
func (e *event) UnmarshalJSON(data []byte) error {
	type plain event
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		*e = event{Kind: eventkind.Unreadable, Detail: fmt.Sprintf("event %s does not read: %v", clip(data), err)}
		return nil
	}
	*e = event(p)
	return nil
}

// clip shows at most 80 bytes of data.
func clip(data []byte) string {
	if len(data) > 80 {
		return string(data[:80]) + "…"
	}
	return string(data)
}

func newState(key governor.Key, boot string) *state {
	return &state{Version: stateVersion, Project: key.Project, Resource: key.Resource, Boot: boot}
}

func (st *state) used() int {
	n := 0
	for _, h := range st.Holders {
		n += h.Weight
	}
	return n
}

func (st *state) holder(id string) *holder {
	for i := range st.Holders {
		if st.Holders[i].ID == id {
			return &st.Holders[i]
		}
	}
	return nil
}

func (st *state) waiterIndex(id string) int {
	for i := range st.Waiters {
		if st.Waiters[i].ID == id {
			return i
		}
	}
	return -1
}

// check rejects a state that governor never writes.
func (st *state) check(key governor.Key) error {
	switch {
	case st.Version == 0:
		return errors.New("no version")
	case st.Version > stateVersion:
		return fmt.Errorf("version %d, written by a newer governor (this one reads %d)", st.Version, stateVersion)
	case st.Project != key.Project || st.Resource != key.Resource:
		return fmt.Errorf("it belongs to %s/%s, not %s", st.Project, st.Resource, key)
	case st.Limit < 0 || st.Limit > governor.MaxLimit || st.Drift < 0 || st.Token < 0:
		return fmt.Errorf("limit %d, drift %d, token %d out of range", st.Limit, st.Drift, st.Token)
	case st.Live != nil && (st.Live.Limit < 1 || st.Live.Limit > governor.MaxLimit):
		return fmt.Errorf("live limit %d out of range", st.Live.Limit)
	}
	seen := map[string]bool{}
	for _, h := range st.Holders {
		if h.ID == "" || seen[h.ID] || h.Weight < 1 || h.Token <= 0 {
			return fmt.Errorf("bad holder %q (weight %d, token %d)", h.ID, h.Weight, h.Token)
		}
		seen[h.ID] = true
	}
	// Holders weighing more than the limit (written by something else)
	// are not refused: the weight held is summed from them, so nobody
	// else is granted while they hold, and they go as they expire,
	// instead of the resource being refused for ever.
	return nil
}

// badWaiter says what is wrong with waiter i of st, or "".
func (st *state) badWaiter(i int) string {
	w := st.Waiters[i]
	switch {
	case w.bad != "":
		return w.bad
	case w.ID == "" || w.Weight < 1:
		return fmt.Sprintf("waiter %q of weight %d", w.ID, w.Weight)
	case st.waiterIndex(w.ID) != i:
		return fmt.Sprintf("waiter %q queued twice", w.ID)
	}
	return ""
}

func marshal(st *state) ([]byte, error) {
	data, err := json.Marshal(st)
	return append(data, '\n'), err
}

func (b *Backend) statePath(key governor.Key) string { return b.resourceFile(key, stateName) }

// resourceFile is the path of file name in key's directory, for messages.
func (b *Backend) resourceFile(key governor.Key, name string) string {
	return b.projectPath(key.Project) + "/" + escape(key.Resource) + "/" + name
}

// load reads the state of key from its directory. A missing file is a new
// state; a corrupt or unreadable one is an error naming the file and
// saying what to do.
func (b *Backend) load(dir int, key governor.Key) (*state, error) {
	data, err := readFile(dir, stateName)
	if errors.Is(err, os.ErrNotExist) {
		return newState(key, b.boot), nil
	}
	path := b.statePath(key)
	if err != nil {
		return nil, fmt.Errorf("governor: file backend: cannot read the state of %s: %s: %w; "+
			"fix the file's owner and permissions (it must be a regular file you own, mode 0600)", key, path, err)
	}
	st := &state{}
	if err := json.Unmarshal(data, st); err != nil {
		return nil, corrupt(key, path, err)
	}
	if err := st.check(key); err != nil {
		return nil, corrupt(key, path, err)
	}
	return st, nil
}

func corrupt(key governor.Key, path string, err error) error {
	return fmt.Errorf("%w: %s: %v; the file was left as it is. To reset %s, make sure none of its holders still "+
		"runs, then move the file aside (resetting forgets the holders it lists, so their slots could be "+
		"handed out twice)", ErrCorrupt, path, err, key)
}

// clockNow is one reading of both clocks.
type clockNow struct {
	boot int64     // boot clock, ns
	wall time.Time // without monotonic reading
}

// at converts a boot-clock instant to wall time, for display.
func (c clockNow) at(inst int64) time.Time {
	return c.wall.Add(time.Duration(inst - c.boot))
}

// status describes st as of now: holders and waiters of another boot, or
// expired, are left out. At most maxHolders holders are listed, those
// that expire first (all when maxHolders < 0).
func (st *state) status(key governor.Key, now clockNow, boot string, maxHolders int) governor.Status {
	s := governor.Status{Key: key, Limit: st.Limit, DriftLimit: st.Drift, Counters: st.Counters, Now: now.wall,
		DriftPolicy: st.PolicyDrift, CoolOff: st.coolOffEnd(now, boot), Adaptive: st.adaptiveStatus()}
	s.Policy, _ = governor.ParsePolicy(st.Policy)
	if st.SignalAt != 0 {
		s.LastSignal = time.Unix(0, st.SignalAt)
	}
	if p := st.Paused; p != nil {
		s.Paused = &governor.Paused{Since: time.Unix(0, p.Since), By: p.By}
	}
	if l := st.Live; l != nil {
		s.LiveLimit = &governor.LiveLimit{Limit: l.Limit, By: l.By, At: time.Unix(0, l.At)}
	}
	for _, d := range st.Holds {
		s.Holds = append(s.Holds, time.Duration(d))
	}
	if staleBoot(st.Boot, boot) {
		return s
	}
	hs := make([]holder, 0, len(st.Holders))
	for _, h := range st.Holders {
		if h.Expires > now.boot {
			hs = append(hs, h)
			s.Used += h.Weight
		}
	}
	sort.SliceStable(hs, func(i, j int) bool {
		if hs[i].Expires != hs[j].Expires {
			return hs[i].Expires < hs[j].Expires
		}
		return hs[i].ID < hs[j].ID
	})
	if maxHolders >= 0 && len(hs) > maxHolders {
		hs = hs[:maxHolders]
	}
	for _, h := range hs {
		s.Holders = append(s.Holders, governor.Holder{LeaseID: h.ID, Weight: h.Weight, Token: h.Token,
			AcquiredAt: now.at(h.Acquired), Heartbeat: now.at(h.Heartbeat), Expires: now.at(h.Expires),
			Declaration: h.Decl})
		if p := h.lastProgress(); p != 0 {
			s.Holders[len(s.Holders)-1].Progress = now.at(p)
		}
		if h.Cancel != nil {
			s.Holders[len(s.Holders)-1].Cancelled = time.Unix(0, h.Cancel.At)
		}
	}
	if maxHolders < 0 {
		s.Shares = st.shares(hs, now)
	}
	for _, w := range st.Waiters {
		if w.Expires > now.boot && w.bad == "" {
			ww := w.Weight
			if w.Exclusive && st.Limit > 0 {
				ww = st.Limit // the limit in force, as when it is granted
			}
			s.Waiters = append(s.Waiters, governor.Waiter{ID: w.ID, Weight: ww,
				EnqueuedAt: now.at(w.Enqueued), Declaration: w.Decl})
		}
	}
	return s
}

// staleBoot tells whether a state written during boot was is from before
// the current boot is: then every process it names is dead.
func staleBoot(was, is string) bool {
	return was != "" && is != "" && was != is
}
