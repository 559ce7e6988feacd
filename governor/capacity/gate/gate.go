// Package gate grants a resource's slots locally, from a capacity lease
// (package capacity, docs/capacity.md): one call to the backend per
// refresh instead of two per grant. A Governor does the same for the
// resources its Options.Capacity names, inside Governor.Hold; a Gate is
// that local grant on its own, on any backend.
//
// A Gate holds one capacity lease on one resource. Acquire grants a slot
// with no round trip while fewer than the lease's share are in use and
// the lease is valid on this process's monotonic clock: until the send
// time of its last answered refresh plus Lease less Margin, and never
// after the machine was suspended (the wall clock's lead over the
// monotonic one since that send), as a lease's local deadline is counted
// (governor.Lease). The backend's expiry of the share is never earlier
// than that deadline, so a process stopped (SIGSTOP) or cut off past it
// stops granting, and the context of each grant is cancelled, before
// its share can be granted elsewhere. A background refresh every
// Refresh reports what the process wants (in use plus waiting) and
// takes its new share; while it is on its way no grant passes the
// number in use it reported, so that a share that shrinks is never
// exceeded. Each refresh, and the release at Close, reports how many
// slots the Gate has granted since New, which the backend counts in the
// resource's governor.Counters.LocalGrants.
package gate

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/capacity"
	"github.com/governor-dev/governor/governor/internal/capgate"
	"github.com/governor-dev/governor/governor/leasetiming"
)

// The defaults of Options, chosen with the fleet simulation
// (docs/capacity.md, "Choosing the defaults").
const (
	DefaultLease   = capacity.DefaultLease
	DefaultRefresh = capacity.DefaultRefresh
)

// ErrClosed is returned by Acquire on a closed Gate.
var ErrClosed = capgate.ErrClosed

// ErrLost is a grant's Err once its capacity lease lapsed: its deadline
// passed, or the machine was suspended, before a refresh was answered.
var ErrLost = capgate.ErrLost

// Options configure a Gate.
type Options struct {
	// Key is the resource; Limit the limit asked for (1 to
	// governor.MaxLimit), as an acquire asks for it.
	Key   governor.Key
	Limit int
	// Lease is the capacity lease's length (default DefaultLease),
	// Refresh how often it is refreshed (default DefaultRefresh; less
	// than Lease less Margin), Margin how much sooner than Lease the
	// local deadline falls (default Lease/10).
	Lease, Refresh, Margin time.Duration
	// Declaration is shown beside the share's holder. With its process
	// declared (HostID, PID, StartTime: proc.Current), a killed
	// process's share returns at once to the others on its machine
	// (docs/capacity.md), else when its lease ends.
	Declaration governor.Declaration
}

// Gate grants slots from a capacity lease: Acquire, Share and Close
// (see package capgate's Gate). Its methods are safe for concurrent use.
type Gate struct {
	*capgate.Gate
	id string
}

// Grant is one slot granted locally: its Context, Err (checked on the
// clock), Deadline and Release.
type Grant = capgate.Grant

// New opens a Gate: it takes its first share at once (a newcomer's share
// may be 0 until others shrink) and refreshes it in the background until
// Close.
func New(ctx context.Context, b governor.Backend, o Options) (*Gate, error) {
	if o.Lease == 0 {
		o.Lease = DefaultLease
	}
	if o.Refresh == 0 {
		o.Refresh = DefaultRefresh
	}
	if o.Margin == 0 {
		o.Margin = o.Lease / 10
	}
	if err := governor.ValidateResource(o.Key.Resource); err != nil {
		return nil, err
	}
	switch {
	case o.Limit < 1 || o.Limit > governor.MaxLimit:
		return nil, fmt.Errorf("%w: gate limit %d; allowed: 1 to %d", governor.ErrInvalid, o.Limit, governor.MaxLimit)
	case o.Lease < time.Second || o.Lease > leasetiming.MaxTTL:
		return nil, fmt.Errorf("%w: gate lease %v; allowed: 1s to %v", governor.ErrInvalid, o.Lease, leasetiming.MaxTTL)
	case o.Margin < 0 || o.Refresh <= 0 || o.Refresh >= o.Lease-o.Margin:
		return nil, fmt.Errorf("%w: gate refresh %v, margin %v, lease %v; allowed: 0 < refresh < lease - margin", governor.ErrInvalid,
			o.Refresh, o.Margin, o.Lease)
	}
	var sb [governor.SecretLen / 2]byte
	if _, err := rand.Read(sb[:]); err != nil {
		return nil, err
	}
	secret := hex.EncodeToString(sb[:])
	id := governor.LeaseIDOf(secret)
	send := func(ctx context.Context, a capacity.Ask) (capacity.Share, int64, error) {
		res, err := b.Acquire(ctx, governor.Request{Key: o.Key, ID: id, Secret: secret, Limit: o.Limit, Weight: 1, TTL: o.Lease,
			Mode: governor.Fail, Declaration: o.Declaration, Capacity: &a})
		switch {
		case err != nil:
			return capacity.Share{}, 0, err
		case res.Share == nil:
			return capacity.Share{}, 0, fmt.Errorf("%w: %s answered a capacity lease without a share", governor.ErrBackend, o.Key)
		}
		return *res.Share, res.Token, nil
	}
	g, err := capgate.New(ctx, capgate.Options{Limit: o.Limit, Lease: o.Lease, Refresh: o.Refresh, Margin: o.Margin,
		Fatal: refused}, send)
	if err != nil {
		return nil, err
	}
	return &Gate{Gate: g, id: id}, nil
}

// refused tells a refresh's error that ends the gate: the backend
// refused the lease (bad input, or not its owner).
func refused(err error) bool {
	return errors.Is(err, governor.ErrInvalid) || errors.Is(err, governor.ErrNotOwner)
}

// ID is the capacity lease's id (its holder's in the resource's status).
func (g *Gate) ID() string { return g.id }
