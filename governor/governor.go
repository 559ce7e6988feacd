package governor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/governor-dev/governor/governor/proc"
)

// Defaults used when an Options or AcquireOptions field is zero.
const (
	DefaultTTL      = 30 * time.Second
	DefaultQueueTTL = 10 * time.Second
	// DefaultReleaseTimeout bounds a release, which runs on a fresh
	// context so that a cancelled caller still frees its slots.
	DefaultReleaseTimeout = 5 * time.Second
)

// NoPID, as Options.PID, declares no holder process.
const NoPID = -1

// Options configure a Governor. The zero value of each field means the
// documented default.
type Options struct {
	// Project namespaces every resource (default "default").
	Project string
	// Session names the holder in declarations (default "host:pid").
	Session string
	// Command is the holder's command line as shown to others; redact
	// secrets before setting it.
	Command string
	// TTL is the lease time to live (default DefaultTTL).
	TTL time.Duration
	// Heartbeat is the renewal interval (default TTL/3). It must be
	// shorter than TTL minus the safety margin.
	Heartbeat time.Duration
	// SafetyMargin is how long before the backend's expiry a holder that
	// could not renew declares its lease lost (default TTL/5).
	SafetyMargin time.Duration
	// QueueTTL bounds how long a waiter's queue entry survives without a
	// refresh; waiters refresh (and re-check) every QueueTTL/4 (default
	// DefaultQueueTTL).
	QueueTTL time.Duration
	// PID, when set, is declared as the holder instead of this process:
	// for a lease that outlives the CLI that took it (the shell script
	// that ran `governor acquire`). Its start time is read from /proc.
	// NoPID declares no process: the lease then lives by its TTL and
	// renewals alone, and is never reclaimed as dead.
	PID int
	// LockOrder lists resource prefixes in the order AcquireAll takes
	// them ("issue" matches "issue" and "issue:2316"); resources no
	// prefix matches come after, by name.
	LockOrder []string
}

// Governor hands out leases from one backend. It is safe for concurrent
// use; one Governor per process is the intended use.
type Governor struct {
	b         Backend
	project   string
	ttl       time.Duration
	heartbeat time.Duration
	margin    time.Duration
	queueTTL  time.Duration
	order     []string
	decl      Declaration
	self      proc.Self
	rec       *recorder

	mu     sync.Mutex
	leases map[*Lease]struct{}
	closed bool
}

// New returns a Governor on b. It fails with ErrInvalid on a bad option
// and leaves b untouched.
func New(b Backend, opts Options) (*Governor, error) {
	if b == nil {
		return nil, invalid("nil backend")
	}
	g := &Governor{b: b, project: opts.Project, ttl: opts.TTL, heartbeat: opts.Heartbeat,
		margin: opts.SafetyMargin, queueTTL: opts.QueueTTL, leases: map[*Lease]struct{}{}, rec: newRecorder(b)}
	if g.project == "" {
		g.project = DefaultName
	}
	if err := ValidateProject(g.project); err != nil {
		return nil, err
	}
	if g.ttl == 0 {
		g.ttl = DefaultTTL
	}
	if err := validateTTL("lease TTL", g.ttl); err != nil {
		return nil, err
	}
	if g.margin == 0 {
		g.margin = g.ttl / 5
	}
	if g.heartbeat == 0 {
		g.heartbeat = g.ttl / 3
	}
	if g.margin < 0 || g.heartbeat <= 0 || g.heartbeat >= g.ttl-g.margin {
		return nil, invalid("heartbeat %v with safety margin %v and TTL %v; the heartbeat must be positive and shorter than TTL minus margin",
			g.heartbeat, g.margin, g.ttl)
	}
	if g.queueTTL == 0 {
		g.queueTTL = DefaultQueueTTL
	}
	if err := validateTTL("queue TTL", g.queueTTL); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, p := range opts.LockOrder {
		if p == "" || seen[p] {
			return nil, invalid("lock order entry %q: entries must be non-empty and unique", p)
		}
		seen[p] = true
	}
	g.order = append([]string(nil), opts.LockOrder...)
	g.self = proc.Current()
	g.decl = Declaration{Session: opts.Session, Host: g.self.Host, HostID: g.self.HostID,
		PID: g.self.PID, StartTime: g.self.StartTime, Command: opts.Command}
	if opts.PID == NoPID {
		g.decl.PID, g.decl.StartTime = 0, 0
	} else if opts.PID != 0 {
		start, err := proc.StartTime(opts.PID)
		if err != nil {
			return nil, invalid("holder pid %d: %v", opts.PID, err)
		}
		g.decl.PID, g.decl.StartTime = opts.PID, start
	}
	if g.decl.Session == "" {
		g.decl.Session = fmt.Sprintf("%s:%d", g.self.Host, g.self.PID)
		if g.decl.PID != 0 {
			g.decl.Session = fmt.Sprintf("%s:%d", g.self.Host, g.decl.PID)
		}
	}
	return g, nil
}

// Project returns the project the Governor works in.
func (g *Governor) Project() string { return g.project }

// Session returns the session the Governor declares.
func (g *Governor) Session() string { return g.decl.Session }

// Backend returns the backend the Governor works on.
func (g *Governor) Backend() Backend { return g.b }

// AcquireOptions describe one acquire. Limit is required; the zero value
// of the others means the documented default.
type AcquireOptions struct {
	// Limit is the resource's number of slots, 1 to MaxLimit. When
	// processes disagree, the limit already in force wins (see
	// Status.DriftLimit).
	Limit int
	// Weight is the slots to take (default 1).
	Weight int
	// Exclusive takes the whole limit.
	Exclusive bool
	// Mode: Fail (default) or Wait.
	Mode Mode
	// TTL overrides the Governor's lease TTL.
	TTL time.Duration
	// OnQueued, if set, is called each time a waiting acquire learns its
	// place in the queue (for a status line).
	OnQueued func(Result)
}

// Acquire takes weight slots of resource. On success it returns a Lease
// that heartbeats itself until Release. In Fail mode a resource without
// room is a *BusyError (errors.Is ErrBusy); in Wait mode the call queues
// in FIFO order until granted or ctx ends, and then returns ctx.Err()
// leaving no waiter and no lease behind. Bad input is ErrInvalid or
// ErrTooHeavy with nothing changed.
func (g *Governor) Acquire(ctx context.Context, resource string, o AcquireOptions) (*Lease, error) {
	req, err := g.request(resource, o)
	if err != nil {
		return nil, err
	}
	if err := g.checkOpen(); err != nil {
		return nil, err
	}
	return g.acquire(ctx, req, o.OnQueued)
}

func (g *Governor) request(resource string, o AcquireOptions) (Request, error) {
	if err := ValidateResource(resource); err != nil {
		return Request{}, err
	}
	if err := validateLimit(resource, o.Limit); err != nil {
		return Request{}, err
	}
	w := o.Weight
	if o.Exclusive {
		if w != 0 && w != o.Limit {
			return Request{}, invalid("weight %d with exclusive for %s; exclusive takes the whole limit (%d)", w, resource, o.Limit)
		}
		w = o.Limit
	}
	if w == 0 {
		w = 1
	}
	if err := validateWeight(resource, w, o.Limit); err != nil {
		return Request{}, err
	}
	ttl := o.TTL
	if ttl == 0 {
		ttl = g.ttl
	} else if err := validateTTL("lease TTL", ttl); err != nil {
		return Request{}, err
	} else if g.heartbeat >= ttl-ttl/5 {
		return Request{}, invalid("lease TTL %v for %s is too short for the heartbeat %v", ttl, resource, g.heartbeat)
	}
	if o.Mode != Fail && o.Mode != Wait {
		return Request{}, invalid("mode %d; allowed: Fail, Wait", o.Mode)
	}
	return Request{Key: Key{g.project, resource}, ID: newID(), Limit: o.Limit, Weight: w,
		TTL: ttl, Mode: o.Mode, QueueTTL: g.queueTTL, Declaration: g.decl}, nil
}

func (g *Governor) acquire(ctx context.Context, req Request, onQueued func(Result)) (*Lease, error) {
	var notify <-chan struct{}
	if req.Mode == Wait {
		ch, stop := g.b.Notify(req.Key, req.ID)
		defer stop()
		notify = ch
	}
	recheck := g.queueTTL / 4
	backoff := newBackoff()
	timer := time.NewTimer(time.Hour)
	timer.Stop() // since Go 1.23 a stopped timer delivers nothing stale
	defer timer.Stop()
	req.New = true
	start := time.Now()
	for {
		sent := time.Now()
		res, err := g.b.Acquire(ctx, req)
		req.New = false
		if err == nil {
			backoff.reset()
			switch res.Outcome {
			case Granted:
				g.rec.observe(req.Key, HistogramWait, time.Since(start))
				return g.newLease(req, res, sent), nil
			case Refused, Queued:
				if g.reclaimDead(ctx, req.Key, res.Status) {
					continue
				}
				if res.Outcome == Refused {
					return nil, &BusyError{Resource: req.Key.Resource, Status: res.Status}
				}
				if onQueued != nil {
					onQueued(res)
				}
				timer.Reset(recheck)
			default:
				return nil, fmt.Errorf("governor: backend returned outcome %d", res.Outcome)
			}
		} else {
			if isFinal(err) || req.Mode == Fail || ctx.Err() != nil {
				if req.Mode == Wait {
					g.cancel(req.Key, req.ID)
				}
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				return nil, err
			}
			// A waiter rides out a transport failure: the backend may be
			// restarting, and re-sending the same id re-queues it.
			timer.Reset(backoff.next())
		}
		select {
		case <-ctx.Done():
			timer.Stop()
			g.cancel(req.Key, req.ID)
			return nil, ctx.Err()
		case <-notify:
			timer.Stop()
		case <-timer.C:
		}
	}
}

// isFinal tells errors that retrying cannot cure.
func isFinal(err error) bool {
	return errors.Is(err, ErrInvalid) || errors.Is(err, ErrTooHeavy) || errors.Is(err, ErrClosed) || errors.Is(err, ErrBackend)
}

// cancel withdraws a waiter on a fresh bounded context: the caller's has
// usually ended.
func (g *Governor) cancel(key Key, id string) {
	ctx, cancel := context.WithTimeout(context.Background(), DefaultReleaseTimeout)
	defer cancel()
	_ = g.b.Cancel(ctx, key, id)
}

// reclaimDead removes holders on this host whose owner process is proven
// dead (SPEC invariant 2) and reports whether it removed any.
func (g *Governor) reclaimDead(ctx context.Context, key Key, st Status) bool {
	removed := false
	for _, h := range st.Holders {
		if h.HostID == "" || h.HostID != g.self.HostID {
			continue
		}
		if proc.Check(h.PID, h.StartTime) != proc.Dead {
			continue
		}
		if ok, err := g.b.Reclaim(ctx, key, h.LeaseID, h.Token); err == nil && ok {
			removed = true
		}
	}
	return removed
}

func (g *Governor) checkOpen() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return ErrClosed
	}
	return nil
}

// Want is one resource of an AcquireAll.
type Want struct {
	Resource string
	AcquireOptions
}

// AcquireAll takes several resources in the fixed global order (Options
// LockOrder, then name), so that two callers never deadlock. On failure
// it releases what it took, in reverse, and returns the error. The leases
// come back in acquisition order.
func (g *Governor) AcquireAll(ctx context.Context, wants []Want) ([]*Lease, error) {
	reqs := make([]Request, len(wants))
	seen := map[string]bool{}
	for i, w := range wants {
		if seen[w.Resource] {
			return nil, invalid("resource %s asked for twice", w.Resource)
		}
		seen[w.Resource] = true
		r, err := g.request(w.Resource, w.AcquireOptions)
		if err != nil {
			return nil, err
		}
		reqs[i] = r
	}
	idx := make([]int, len(wants))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return g.Less(wants[idx[a]].Resource, wants[idx[b]].Resource) })
	var got []*Lease
	for _, i := range idx {
		l, err := g.acquire(ctx, reqs[i], wants[i].OnQueued)
		if err != nil {
			for j := len(got) - 1; j >= 0; j-- {
				_ = got[j].Release()
			}
			return nil, err
		}
		got = append(got, l)
	}
	return got, nil
}

// Less orders resources for AcquireAll: by the first LockOrder prefix
// they match, then by name.
func (g *Governor) Less(a, b string) bool {
	ra, rb := g.rank(a), g.rank(b)
	if ra != rb {
		return ra < rb
	}
	return a < b
}

func (g *Governor) rank(name string) int {
	for i, p := range g.order {
		if name == p || strings.HasPrefix(name, p+":") {
			return i
		}
	}
	return len(g.order)
}

// Status reads resource without acquiring anything.
func (g *Governor) Status(ctx context.Context, resource string) (Status, error) {
	if err := ValidateResource(resource); err != nil {
		return Status{}, err
	}
	return g.b.Status(ctx, Key{g.project, resource})
}

// Resources lists the project's resources that have state.
func (g *Governor) Resources(ctx context.Context) ([]string, error) {
	return g.b.Resources(ctx, g.project)
}

// Release frees lease id of resource on behalf of a process that does not
// hold the *Lease (a shell script's `governor release`). Only the lease id
// authorises it.
func (g *Governor) Release(ctx context.Context, resource, id string) error {
	if err := ValidateResource(resource); err != nil {
		return err
	}
	return g.b.Release(ctx, Key{g.project, resource}, id)
}

// Renew extends lease id of resource to now+ttl (0: the lease's own TTL)
// on behalf of a process that does not hold the *Lease. A lease that is
// gone is ErrLeaseLost; renew never re-acquires.
func (g *Governor) Renew(ctx context.Context, resource, id string, ttl time.Duration) (time.Time, error) {
	if err := ValidateResource(resource); err != nil {
		return time.Time{}, err
	}
	if ttl != 0 {
		if err := validateTTL("lease TTL", ttl); err != nil {
			return time.Time{}, err
		}
	}
	return g.b.Renew(ctx, Key{g.project, resource}, id, ttl)
}

// Close stops every lease's heartbeat and releases them, then closes the
// backend. It returns the first release error.
func (g *Governor) Close() error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil
	}
	g.closed = true
	ls := make([]*Lease, 0, len(g.leases))
	for l := range g.leases {
		ls = append(ls, l)
	}
	g.mu.Unlock()
	var first error
	for _, l := range ls {
		if err := l.Release(); err != nil && first == nil && !errors.Is(err, ErrLeaseLost) {
			first = err
		}
	}
	g.rec.close()
	if err := g.b.Close(); err != nil && first == nil {
		first = err
	}
	return first
}

func newID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("governor: crypto/rand failed: " + err.Error()) // never happens on Linux
	}
	return hex.EncodeToString(b[:])
}

// backoff spaces retries after transport failures: 50ms doubling to 2s.
type backoff struct{ d time.Duration }

func newBackoff() *backoff { return &backoff{} }
func (b *backoff) reset()  { b.d = 0 }
func (b *backoff) next() time.Duration {
	if b.d == 0 {
		b.d = 50 * time.Millisecond
	} else if b.d < 2*time.Second {
		b.d *= 2
	}
	return b.d
}
