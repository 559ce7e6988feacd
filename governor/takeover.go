package governor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/governor-dev/governor/governor/proc"
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
// or o.Force is set; a lease that has already expired is gone, and
// taking over its slot is a plain acquire (Fail mode) with limit. It
// returns the new leases, heartbeating, or an *OwnerAliveError, a
// *BusyError (expired lease, but its slot was taken), or ErrNotHeld
// when no lease matches.
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
	if len(targets) == 0 {
		if o.LeaseID == "" {
			return nil, fmt.Errorf("%w: session %s holds no lease on %s", ErrNotHeld, o.Session, resource)
		}
		// Expired (or released): its slot is free unless someone else
		// took it.
		l, err := g.Acquire(ctx, resource, AcquireOptions{Limit: max(limit, st.Limit), TTL: o.TTL, NoHeartbeat: o.NoHeartbeat})
		if err != nil {
			return nil, err
		}
		return []*Lease{l}, nil
	}
	if !o.Force {
		for _, h := range targets {
			if reason := g.alive(ctx, key, h); reason != "" {
				return nil, &OwnerAliveError{Resource: resource, Holder: h, Now: st.Now, Reason: reason}
			}
		}
	}
	var out []*Lease
	for _, h := range targets {
		req, tm, err := g.request(resource, AcquireOptions{Limit: max(st.Limit, h.Weight), Weight: h.Weight, TTL: o.TTL, NoHeartbeat: o.NoHeartbeat})
		if err != nil {
			return out, err
		}
		sent := time.Now()
		res, err := g.b.Takeover(ctx, key, h.LeaseID, req)
		if errors.Is(err, ErrNotHeld) {
			continue // expired or released meanwhile
		}
		if err != nil {
			return out, err
		}
		l, err := g.newLease(req, res, sent, tm)
		if err != nil {
			return out, err
		}
		out = append(out, l)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: the leases to take over on %s ended meanwhile", ErrNotHeld, resource)
	}
	return out, nil
}

// TakeoverDetail is the detail of the takeover event a backend records
// when req replaces a lease: who took it. The backend adds the new
// token (", token T"). LeaseLostError.Reason shows it to the holder that
// lost the lease.
func TakeoverDetail(req Request) string {
	d := req.Declaration
	return fmt.Sprintf("taken over by session %s (pid %d on %s): lease %s", d.Session, d.PID, d.Host, req.ID)
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
	if err := validateName("sequence", name, MaxNameLen); err != nil {
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
