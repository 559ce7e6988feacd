package view

import (
	"errors"
	"slices"
	"time"

	"github.com/governor-dev/governor/governor"
)

// Slots is the stable --json schema of `governor slots`.
type Slots struct {
	Project   string     `json:"project"`
	Resources []Resource `json:"resources"`
	// Unreadable are the resources whose state could not be read
	// (Statuses' UnreadableError); absent when every one was.
	Unreadable []Unreadable `json:"unreadable,omitempty"`
	// RateShares are the rate keys with rate shares (docs/capacity.md),
	// a rate-only provider's too; absent when none.
	RateShares []RateKey `json:"rate_shares,omitempty"`
}

type Resource struct {
	Resource   string `json:"resource"`
	Limit      int    `json:"limit"`
	Used       int    `json:"used"`
	Free       int    `json:"free"`
	DriftLimit int    `json:"drift_limit,omitempty"`
	// LimitSource says where the limit in force came from: "live" (set
	// by 'governor limit': see live_limit), "adaptive" (held by AIMD:
	// see adaptive), "asked" (by the processes that use it), or
	// "configured" (never used yet), or "stale" (the configuration no
	// longer defines it: see not_configured).
	LimitSource string `json:"limit_source"`
	// NotConfigured says why the configuration no longer defines a
	// resource with state (config.Catalog.Unconfigured).
	NotConfigured string     `json:"not_configured,omitempty"`
	LiveLimit     *LiveLimit `json:"live_limit,omitempty"`
	Paused        *Paused    `json:"paused,omitempty"`
	// ExpectedWait is a newcomer's (weight 1, at the tail).
	ExpectedWait Estimate `json:"expected_wait"`
	Holders      []Holder `json:"holders"`
	Waiters      []Waiter `json:"waiters"`
	// Shares are the capacity leases (docs/capacity.md); absent when none.
	Shares    []Share        `json:"shares,omitempty"`
	Counters  map[string]int `json:"counters"`
	MkdirSlot *MkdirSlot     `json:"mkdir_slot,omitempty"`
	// Under a queue policy: the policy in force (governor.Policy.Encode),
	// one asked for that differs, and the weight each class holds.
	Policy      string `json:"policy,omitempty"`
	DriftPolicy string `json:"drift_policy,omitempty"`
	// The same as the configuration spells them (PolicyText).
	PolicyText      string         `json:"policy_text,omitempty"`
	DriftPolicyText string         `json:"drift_policy_text,omitempty"`
	ClassUse        map[string]int `json:"class_use,omitempty"`
	// Adaptive concurrency and rate-limit signals (governor backoff).
	Adaptive     *governor.AdaptiveState `json:"adaptive,omitempty"`
	CoolOffUntil *time.Time              `json:"cool_off_until,omitempty"`
	LastSignalAt *time.Time              `json:"last_signal_at,omitempty"`
}

type LiveLimit struct {
	Limit int       `json:"limit"`
	By    string    `json:"by"`
	SetAt time.Time `json:"set_at"`
}

type Paused struct {
	Since time.Time `json:"since"`
	By    string    `json:"by"`
}

// Estimate is a ExpectedWait: seconds is null when unknown;
// text says it and what it rests on; holds is how many recent holds it
// rests on.
type Estimate struct {
	Seconds         *float64 `json:"seconds"`
	Text            string   `json:"text"`
	Holds           int      `json:"holds"`
	MeanHoldSeconds float64  `json:"mean_hold_seconds"`
	Paused          bool     `json:"paused,omitempty"`
}

func estimateOf(e WaitEstimate) Estimate {
	out := Estimate{Text: e.String(), Holds: e.Holds, MeanHoldSeconds: secs(e.MeanHold), Paused: e.Paused}
	if e.Known {
		s := secs(e.Wait)
		out.Seconds = &s
	}
	return out
}

// MarkStale marks each resource of s that the configuration no longer
// defines (why gives the reason, "" when it does) as "stale".
func (s Slots) MarkStale(why func(resource string) string) Slots {
	for i, r := range s.Resources {
		if w := why(r.Resource); w != "" && r.LimitSource == "asked" {
			s.Resources[i].LimitSource, s.Resources[i].NotConfigured = "stale", w
		}
	}
	return s
}

// LimitSource says where the limit in force of st came from, for slots
// and config show: "live" (governor limit), "adaptive" (held by AIMD
// after rate-limit signals: see adaptive), "asked" (by the processes
// that use it) or "configured" (never used: the configuration's).
func LimitSource(st governor.Status) string {
	switch {
	case st.LiveLimit != nil:
		return "live"
	case st.Adaptive != nil && st.Adaptive.Limit == st.Limit:
		return "adaptive"
	case st.Counters.Acquired > 0 || st.Used > 0 || len(st.Waiters) > 0:
		return "asked"
	}
	return "configured"
}

type Holder struct {
	LeaseID          string    `json:"lease_id"`
	Session          string    `json:"session"`
	Host             string    `json:"host"`
	PID              int       `json:"pid"` // the process whose death frees the lease; 0: none declared
	GovernorPID      int       `json:"governor_pid,omitempty"`
	CommandPID       int       `json:"command_pid,omitempty"`
	Processes        string    `json:"processes"`
	Weight           int       `json:"weight"`
	Token            int64     `json:"token"`
	AcquiredAt       time.Time `json:"acquired_at"`
	HeartbeatAt      time.Time `json:"heartbeat_at"`
	ExpiresAt        time.Time `json:"expires_at"`
	AgeSeconds       float64   `json:"age_seconds"`
	HeartbeatSeconds float64   `json:"heartbeat_age_seconds"`
	ExpiresInSeconds float64   `json:"expires_in_seconds"`
	Command          string    `json:"command"`
	// The last progress mark ('governor touch', 'governor renew'; the
	// grant when none came yet) of a lease with a progress timeout, or
	// of any lease marked; absent otherwise.
	ProgressAt             *time.Time `json:"progress_at,omitempty"`
	ProgressSeconds        *float64   `json:"progress_age_seconds,omitempty"`
	ProgressTimeoutSeconds float64    `json:"progress_timeout_seconds,omitempty"`
	Priority               string     `json:"priority,omitempty"`
	FairKey                string     `json:"fair_key,omitempty"`
	// When a newer acquire with its supersede key cancelled it in
	// progress: held until its command has stopped; absent otherwise.
	CancelledAt *time.Time `json:"cancelled_at,omitempty"`
}

// Share is one process's capacity lease: the slots it wanted and had
// in use at its last refresh, and the slots it holds (its share, or
// more while calls above a share that shrank end). Session, host and
// pid are its holder's, absent while it holds nothing.
type Share struct {
	LeaseID          string  `json:"lease_id"`
	Session          string  `json:"session,omitempty"`
	Host             string  `json:"host,omitempty"`
	PID              int     `json:"pid,omitempty"`
	Wanted           int     `json:"wanted"`
	Held             int     `json:"held"`
	Used             int     `json:"used"`
	ExpiresInSeconds float64 `json:"expires_in_seconds"`
}

// sharesOf is st's capacity leases, each with its holder's declaration.
func sharesOf(st governor.Status) []Share {
	var out []Share
	for _, l := range st.Shares {
		s := Share{LeaseID: l.ID, Wanted: l.Want, Held: l.Held, Used: l.InUse, ExpiresInSeconds: secs(l.Expires.Sub(st.Now))}
		if i := slices.IndexFunc(st.Holders, func(h governor.Holder) bool { return h.LeaseID == l.ID }); i >= 0 {
			h := st.Holders[i]
			s.Session, s.Host, s.PID = h.Session, h.Host, h.PID
		}
		out = append(out, s)
	}
	return out
}

type Waiter struct {
	Position       int       `json:"position"`
	ID             string    `json:"id"`
	Session        string    `json:"session"`
	Host           string    `json:"host"`
	PID            int       `json:"pid"`
	GovernorPID    int       `json:"governor_pid,omitempty"`
	Processes      string    `json:"processes"`
	Weight         int       `json:"weight"`
	EnqueuedAt     time.Time `json:"enqueued_at"`
	WaitingSeconds float64   `json:"waiting_seconds"`
	Command        string    `json:"command"`
	// ExpectedWait: see ExpectedWait.
	ExpectedWait Estimate `json:"expected_wait"`
	Priority     string   `json:"priority,omitempty"`
	FairKey      string   `json:"fair_key,omitempty"`
}

// SlotsOf and WriteSlots read the mkdir slot of each resource locks
// binds to one.
func SlotsOf(project string, sts []governor.Status, locks map[string]string) Slots {
	out := Slots{Project: project, Resources: []Resource{}}
	for _, st := range sts {
		m := mkdirSlotOf(locks, &st) // first: the wrapper's hold counts in use
		r := Resource{Resource: st.Key.Resource, Limit: st.Limit, Used: st.Used, Free: max(st.Limit-st.Used, 0),
			DriftLimit: st.DriftLimit, Holders: []Holder{}, Waiters: []Waiter{}, Counters: Counters(st.Counters),
			MkdirSlot: m, LimitSource: LimitSource(st), ExpectedWait: estimateOf(ExpectedWait(st, 0)),
			Policy: st.Policy.Encode(), DriftPolicy: st.DriftPolicy,
			PolicyText: PolicyText(st.Policy), DriftPolicyText: encodedPolicyText(st.DriftPolicy), ClassUse: classUse(st),
			Adaptive: st.Adaptive, Shares: sharesOf(st)}
		if l := st.LiveLimit; l != nil {
			r.LiveLimit = &LiveLimit{Limit: l.Limit, By: l.By, SetAt: l.At.UTC()}
		}
		if p := st.Paused; p != nil {
			r.Paused = &Paused{Since: p.Since.UTC(), By: p.By}
		}
		if st.CoolingOff() != "" {
			at := st.CoolOff.UTC()
			r.CoolOffUntil = &at
		}
		if !st.LastSignal.IsZero() {
			at := st.LastSignal.UTC()
			r.LastSignalAt = &at
		}
		for _, h := range st.Holders {
			r.Holders = append(r.Holders, Holder{LeaseID: h.LeaseID, Session: h.Session, Host: h.Host, PID: h.PID,
				GovernorPID: h.GovernorPID, CommandPID: h.CommandPID(), Processes: h.Processes(), Weight: h.Weight, Token: h.Token, AcquiredAt: h.AcquiredAt.UTC(), HeartbeatAt: h.Heartbeat.UTC(),
				ExpiresAt: h.Expires.UTC(), AgeSeconds: secs(st.Now.Sub(h.AcquiredAt)),
				HeartbeatSeconds: secs(st.Now.Sub(h.Heartbeat)), ExpiresInSeconds: secs(h.Expires.Sub(st.Now)), Command: h.Command,
				ProgressTimeoutSeconds: h.ProgressTimeout.Seconds(), Priority: h.Priority, FairKey: h.FairKey})
			if !h.Progress.IsZero() {
				at, age := h.Progress.UTC(), secs(st.Now.Sub(h.Progress))
				r.Holders[len(r.Holders)-1].ProgressAt, r.Holders[len(r.Holders)-1].ProgressSeconds = &at, &age
			}
			if !h.Cancelled.IsZero() {
				at := h.Cancelled.UTC()
				r.Holders[len(r.Holders)-1].CancelledAt = &at
			}
		}
		for i, wt := range st.Waiters {
			r.Waiters = append(r.Waiters, Waiter{Position: i + 1, ID: wt.ID, Session: wt.Session, Host: wt.Host,
				PID: wt.PID, GovernorPID: wt.GovernorPID, Processes: wt.Processes(), Weight: wt.Weight, EnqueuedAt: wt.EnqueuedAt.UTC(), WaitingSeconds: secs(st.Now.Sub(wt.EnqueuedAt)),
				Command: wt.Command, ExpectedWait: estimateOf(ExpectedWait(st, i+1)),
				Priority: wt.Priority, FairKey: wt.FairKey})
		}
		out.Resources = append(out.Resources, r)
	}
	return out
}

func Counters(c governor.Counters) map[string]int {
	return map[string]int{"acquired": int(c.Acquired), "busy": int(c.Busy), "waited": int(c.Waited),
		"released": int(c.Released), "lost": int(c.Lost), "reclaimed_expired": int(c.ReclaimedExpiry),
		"reclaimed_owner_dead": int(c.ReclaimedDead), "takeovers": int(c.Takeovers),
		"local_grants": int(c.LocalGrants)}
}

// Skipping is s naming the resources err (an *UnreadableError from
// Statuses; else nothing) says could not be read.
func (s Slots) Skipping(err error) Slots {
	var ue *UnreadableError
	if errors.As(err, &ue) {
		s.Unreadable = ue.unreadable()
	}
	return s
}
