package governor

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/governor-dev/governor/governor/naming"
	"github.com/governor-dev/governor/governor/proc"

	"github.com/governor-dev/governor/governor/safetext"
)

// TakeoverOptions name the lease(s) to take over: one lease by id, or
// every lease of a session on the resource (a relay session picking up
// its predecessor's work).
type TakeoverOptions struct {
	LeaseID string
	Session string
	// Force takes over even a lease whose owner may be alive. The old
	// holder's next renewal fails and its fenced writes are refused, but
	// until it notices, two processes may believe they hold the slot.
	Force bool
	// TTL of the new lease (default: the Governor's), and NoHeartbeat as
	// in AcquireOptions.
	TTL         time.Duration
	NoHeartbeat bool
}

// OwnerAliveError refuses a takeover: the holder has not expired and is
// not proven dead. errors.Is(err, ErrOwnerAlive) is true.
type OwnerAliveError struct {
	Resource string
	Holder   Holder
	Now      time.Time
	Reason   string // why it counts as alive: "alive on this host", "on another host"
}

func (e *OwnerAliveError) Error() string {
	return fmt.Sprintf("governor: %s: not taking over from %s: %s; wait for it to expire or use --force",
		e.Resource, e.Holder.Describe(e.Now), e.Reason)
}

// Is makes errors.Is(err, ErrOwnerAlive) hold.
func (e *OwnerAliveError) Is(target error) bool { return target == ErrOwnerAlive }

// Takeover replaces the named lease(s) of resource by new ones held by
// this Governor, each with a new, higher fencing token and the old
// one's weight. It is allowed when the owner is proven dead on this host
// or o.Force is set. A lease (by id) that ended by its expiry or a
// reclaim is taken over too when its slot is free (weight 1), and
// recorded as a takeover naming this Governor's session. It returns the
// new leases, heartbeating, or an *OwnerAliveError, a *BusyError (an
// ended lease whose slot was taken), or ErrNotHeld ("nothing to take
// over") when no lease matches: released, already taken over, unknown.
func (g *Governor) Takeover(ctx context.Context, resource string, limit int, o TakeoverOptions) ([]*Lease, error) {
	if (o.LeaseID == "") == (o.Session == "") {
		return nil, invalid("takeover of %s needs exactly one of a lease id or a session", resource)
	}
	if err := ValidateResource(resource); err != nil {
		return nil, err
	}
	if err := g.enter(); err != nil {
		return nil, err
	}
	defer g.active.Done()
	key := Key{g.project, resource}
	st, err := g.b.Status(ctx, key)
	if err != nil {
		return nil, err
	}
	var targets []Holder
	for _, h := range st.Holders {
		if h.LeaseID == o.LeaseID || (o.Session != "" && h.Session == o.Session) {
			targets = append(targets, h)
		}
	}
	ended := len(targets) == 0
	if ended {
		if o.LeaseID == "" {
			return nil, fmt.Errorf("%w: session %s holds no lease on %s", ErrNotHeld, safetext.Escape(o.Session), resource)
		}
		// Not held: the backend takes it over if it ended by its expiry
		// or a reclaim (recording the takeover), and says ErrNotHeld if
		// it was released or never existed.
		targets = []Holder{{LeaseID: o.LeaseID, Weight: 1}}
	}
	if !o.Force && !ended {
		for _, h := range targets {
			if reason := g.alive(ctx, key, h); reason != "" {
				return nil, &OwnerAliveError{Resource: resource, Holder: h, Now: st.Now, Reason: reason}
			}
		}
	}
	var out []*Lease
	for _, h := range targets {
		req, tm, err := g.request(resource, AcquireOptions{Limit: max(st.Limit, limit, h.Weight), Weight: h.Weight, TTL: o.TTL, NoHeartbeat: o.NoHeartbeat})
		if err != nil {
			return out, err
		}
		mark := g.mark()
		req.Key, req.Takeover = key, h.LeaseID
		res, err := g.b.Acquire(ctx, req)
		if errors.Is(err, ErrNotHeld) {
			continue // released meanwhile
		}
		if err != nil {
			return out, err
		}
		if res.Outcome != Granted { // it ended, and its slot was taken
			return out, &BusyError{Resource: resource, Status: res.Status}
		}
		l, err := g.newLease(req, res, g.sentAt(mark), tm)
		if err != nil {
			return out, err
		}
		out = append(out, l)
		if !o.Force && !ended {
			_ = h.RemoveDeadCgroup() // its owner was proven dead above; best effort
		}
	}
	if len(out) == 0 {
		if o.LeaseID != "" {
			return nil, fmt.Errorf("%w: nothing to take over: lease %s of %s is not held, and did not expire (released, taken over already, or unknown)", ErrNotHeld, o.LeaseID, resource)
		}
		return nil, fmt.Errorf("%w: the leases to take over on %s were released meanwhile", ErrNotHeld, resource)
	}
	return out, nil
}

// PartialTakeoverError is a TakeoverSession that stopped midway: the
// resources in Taken were taken over (their new leases are returned
// beside the error and are held: the old session has lost them, so
// nothing is given back), the takeover of Failed failed with Err, and
// those in Left were not tried. errors.Is and errors.As see Err.
type PartialTakeoverError struct {
	Session string
	Taken   []string
	Failed  string
	Left    []string
	Err     error
}

func (e *PartialTakeoverError) Error() string {
	msg := fmt.Sprintf("governor: takeover of session %s stopped at %s: %v; taken over (held now by this session): %s",
		e.Session, e.Failed, e.Err, strings.Join(e.Taken, ", "))
	if len(e.Left) > 0 {
		msg += "; not tried: " + strings.Join(e.Left, ", ")
	}
	return msg
}

func (e *PartialTakeoverError) Unwrap() error { return e.Err }

// TakeoverSession takes over every lease that session holds on any
// resource of the project — a relay session picking up all of its
// predecessor's work — in the fixed lock order (Options.LockOrder, then
// name), each recorded as a takeover. It checks first that every owner
// is proven dead (unless o.Force), so an owner that may be alive refuses
// the whole takeover (*OwnerAliveError) before anything is taken. A
// session holding nothing is ErrNotHeld. Should a takeover then fail
// (the backend, or a lease taken over by someone else in between), it
// stops there and returns the leases taken so far with a
// *PartialTakeoverError. Leases that already expired are no longer the
// session's: take them over by id. o.LeaseID must be empty.
func (g *Governor) TakeoverSession(ctx context.Context, session string, o TakeoverOptions) ([]*Lease, error) {
	if session == "" || o.LeaseID != "" {
		return nil, invalid("takeover of a session needs the session and no lease id")
	}
	names, err := g.Resources(ctx)
	if err != nil {
		return nil, err
	}
	var held []string
	for _, name := range names {
		st, err := g.Status(ctx, name)
		if err != nil {
			return nil, err
		}
		for _, h := range st.Holders {
			if h.Session != session {
				continue
			}
			if !o.Force {
				if reason := g.alive(ctx, Key{g.project, name}, h); reason != "" {
					return nil, &OwnerAliveError{Resource: name, Holder: h, Now: st.Now, Reason: reason}
				}
			}
			if len(held) == 0 || held[len(held)-1] != name {
				held = append(held, name)
			}
		}
	}
	if len(held) == 0 {
		return nil, fmt.Errorf("%w: nothing to take over: session %s holds no lease in project %s", ErrNotHeld, session, g.project)
	}
	sort.SliceStable(held, func(a, b int) bool { return g.compare(held[a], held[b]) < 0 })
	o.Session = session
	var out []*Lease
	var taken []string
	for i, name := range held {
		ls, err := g.Takeover(ctx, name, 1, o)
		out = append(out, ls...)
		if errors.Is(err, ErrNotHeld) && len(ls) == 0 {
			continue // released meanwhile
		}
		if err != nil {
			return out, &PartialTakeoverError{Session: session, Taken: taken, Failed: name, Left: held[i+1:], Err: err}
		}
		taken = append(taken, name)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: the leases of session %s were released meanwhile", ErrNotHeld, session)
	}
	return out, nil
}

// alive says why h must be presumed alive, or "" when its owner is
// proven dead.
func (g *Governor) alive(ctx context.Context, key Key, h Holder) string {
	if h.HostID == "" || h.HostID != g.self.HostID {
		return fmt.Sprintf("its owner runs on host %s, where this host cannot prove it dead", orUnknown(h.Host))
	}
	switch g.ownerVerdict(ctx, key, h) {
	case proc.Dead:
		return ""
	case proc.Alive:
		return fmt.Sprintf("its owner (%s) is alive on this host", h.Processes())
	}
	return fmt.Sprintf("its owner (%s) cannot be checked", h.Processes())
}

// NextSeq returns the next number of sequence name for the holder of
// lease: numbers never repeat, and a lease whose token is older than one
// already used for the sequence (it was taken over) is ErrStaleToken.
func (g *Governor) NextSeq(ctx context.Context, name string, token int64) (int64, error) {
	if err := validateName("sequence", name, naming.MaxNameLen); err != nil {
		return 0, err
	}
	if token <= 0 {
		return 0, invalid("fencing token %d; allowed: a token from a lease", token)
	}
	return g.b.NextSeq(ctx, g.project, name, token)
}

// Events returns the recorded events of resource at or after since.
func (g *Governor) Events(ctx context.Context, resource string, since time.Time) ([]Event, error) {
	if err := ValidateResource(resource); err != nil {
		return nil, err
	}
	return g.b.Events(ctx, Key{g.project, resource}, since)
}
