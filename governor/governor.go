package governor

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"sync"
	"time"

	"github.com/governor-dev/governor/governor/capacity"
	"github.com/governor-dev/governor/governor/eventkind"
	"github.com/governor-dev/governor/governor/histogram"
	"github.com/governor-dev/governor/governor/leasetiming"
	"github.com/governor-dev/governor/governor/proc"
)

// Defaults used when an Options or AcquireOptions field is zero.
const (
	defaultQueueTTL = 10 * time.Second
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
	// TTL is the lease time to live (default leasetiming.DefaultTTL).
	TTL time.Duration
	// Heartbeat is the renewal interval (default leasetiming.HeartbeatFor the
	// lease's TTL). It must be shorter than TTL minus the safety margin
	// (see leasetiming.Timing). When it is zero, a lease acquired with its own
	// TTL derives its own heartbeat from that TTL.
	Heartbeat time.Duration
	// SafetyMargin is how long before the backend's expiry a holder that
	// could not renew declares its lease lost (default
	// leasetiming.SafetyMarginFor the lease's TTL, a fifth).
	SafetyMargin time.Duration
	// QueueTTL bounds how long a waiter's queue entry survives without a
	// refresh; waiters refresh (and re-check) every QueueTTL/4 (default
	// 10 s).
	QueueTTL time.Duration
	// PID, when set, is declared as the holder instead of this process:
	// for a lease that outlives the CLI that took it (the shell script
	// that ran `governor acquire`). Its start time is read from /proc.
	// NoPID declares no process: the lease then lives by its TTL and
	// renewals alone, and is never reclaimed as dead.
	PID int
	// GovernorPID, with PID, is declared as Declaration.GovernorPID: the
	// process that holds the lease for PID (governor run sets its own pid
	// and its watchdog's as PID). Shown only.
	GovernorPID int
	// Cgroup and RunID, with PID, are declared as Declaration.Cgroup
	// and Declaration.RunID: what proves a `governor run` command tree
	// alive once governor and its watchdog are gone.
	Cgroup string
	RunID  string
	// Log receives the loud lines of degraded mode (a provider's calls
	// going on without the backend, and the backend back; see
	// BackendDown); nil: the standard logger.
	Log func(msg string)
	// OnDegraded, if set, is called as a resource enters (true) and
	// leaves (false) degraded mode in this process: for a
	// governor_degraded gauge (metrics.Instruments.SetDegraded).
	OnDegraded func(resource string, degraded bool)
	// LockOrder lists resource prefixes in the order Hold takes
	// them ("issue" matches "issue" and "issue:2316"); resources no
	// prefix matches come after, by name.
	LockOrder []string
	// Capacity grants the slots of the resources it names from this
	// process's capacity share, with no round trip (capshare.go).
	Capacity map[string]capacity.Config
}

// Governor hands out leases from one backend. It is safe for concurrent
// use; one Governor per process is the intended use.
type Governor struct {
	b        Backend
	rates    RateBackend   // b's, else noRates: an optional capability
	budgets  BudgetBackend // b's, else noBudgets
	project  string
	timing   leasetiming.Timing // resolved, for leases with the Governor's TTL
	set      leasetiming.Timing // as Options set it, zeros unset: for leases with their own TTL
	queueTTL time.Duration
	order    []string
	decl     Declaration
	self     proc.Self
	rec      *recorder
	caps     *capShares

	log        func(string)
	onDegraded func(string, bool)

	mu     sync.Mutex
	leases map[*Lease]struct{}
	// budgetBorn: the budgets' births this Governor saw (budgetgov.go).
	budgetBorn sync.Map
	// down is the degraded state of providers' resources (degraded.go).
	down map[string]*degraded
	// gathering lists the leases whose renewal joins the batch being
	// gathered (renewWith); nil when none is.
	gathering *[]*Lease
	closed    bool
	// watches: the backend runs on its own clock, so a suspend of this
	// machine is watched for (suspend.go); watching: the watch runs
	// (while leases are held).
	watches, watching bool
	// closing ends when Close starts, and with it every call in flight;
	// active counts those calls, which Close waits for before it closes
	// the backend they still need (to withdraw a waiter, to release a
	// grant that raced with Close).
	closing context.Context
	close   context.CancelFunc
	active  sync.WaitGroup
	// losing counts lost leases being freed in the background (Lease's
	// lose), which Close also waits for.
	losing sync.WaitGroup
}

// New returns a Governor on b. It fails with ErrInvalid on a bad option
// or a nil b (also a nil pointer in the interface, such as the
// *redisbackend.Backend of a failed redisbackend.New), and leaves b
// untouched.
func New(b Backend, opts Options) (*Governor, error) {
	if isNil(b) {
		return nil, invalid("nil backend %T; pass the backend that filebackend.New or redisbackend.New returned without an error", b)
	}
	g := &Governor{b: b, rates: ratesOf(b), budgets: budgetsOf(b), project: opts.Project, queueTTL: opts.QueueTTL, leases: map[*Lease]struct{}{},
		log: opts.Log, onDegraded: opts.OnDegraded,
		set: leasetiming.Timing{TTL: opts.TTL, Heartbeat: opts.Heartbeat, SafetyMargin: opts.SafetyMargin}}
	g.closing, g.close = context.WithCancel(context.Background())
	g.rec = newRecorder(b)
	if g.project == "" {
		g.project = DefaultName
	}
	if err := ValidateProject(g.project); err != nil {
		return nil, err
	}
	timing, err := g.set.Resolve(leasetiming.Names{})
	err = invalidTiming(err)
	if err != nil {
		return nil, err
	}
	g.timing = timing
	if g.queueTTL == 0 {
		g.queueTTL = defaultQueueTTL
	}
	if err := validateTTL("queue TTL", g.queueTTL); err != nil {
		return nil, err
	}
	if err := validateLockOrder(opts.LockOrder); err != nil {
		return nil, err
	}
	g.order = append([]string(nil), opts.LockOrder...)
	if g.caps, err = newCapShares(opts.Capacity); err != nil {
		return nil, err
	}
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
		if opts.GovernorPID != opts.PID {
			g.decl.GovernorPID = opts.GovernorPID
			if opts.GovernorPID == g.self.PID {
				g.decl.GovernorStart = g.self.StartTime
			} else if opts.GovernorPID > 0 {
				g.decl.GovernorStart, _ = proc.StartTime(opts.GovernorPID) // 0: shown only, as before
			}
		}
		if err := validRunID(opts.RunID); err != nil {
			return nil, err
		}
		if opts.Cgroup != "" && !filepath.IsAbs(opts.Cgroup) {
			return nil, invalid("cgroup %q; allowed: an absolute directory", opts.Cgroup)
		}
		g.decl.Cgroup, g.decl.RunID = opts.Cgroup, opts.RunID
	}
	if g.decl.User == "" {
		g.decl.User = osUser()
	}
	if g.decl.Session == "" {
		g.decl.Session = fmt.Sprintf("%s:%d", g.self.Host, g.self.PID)
		// A declared pid names the session, except pid 1: every process
		// of its PID namespace shares it (a container's init, the host's
		// init), so the default would not tell their sessions apart.
		if g.decl.PID > 1 {
			g.decl.Session = fmt.Sprintf("%s:%d", g.self.Host, g.decl.PID)
		}
	}
	mc, ok := g.b.(machineClocked)
	g.watches = !ok || !mc.ExpiresOnMachineClock()
	return g, nil
}

// isNil tells a nil interface and an interface holding a nil pointer,
// map, slice, channel or func: calling a method on either panics.
func isNil(b Backend) bool {
	if b == nil {
		return true
	}
	switch v := reflect.ValueOf(b); v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Chan, reflect.Func, reflect.Interface:
		return v.IsNil()
	}
	return false
}

// Project returns the project the Governor works in.
func (g *Governor) Project() string { return g.project }

// Session returns the session the Governor declares.
func (g *Governor) Session() string { return g.decl.Session }

// Backend returns the backend the Governor works on.
func (g *Governor) Backend() Backend { return g.b }

// AcquireOptions describe one acquire. The zero value of each field
// means the documented default.
type AcquireOptions struct {
	// Limit is the resource's number of slots, 1 to MaxLimit; 0: the
	// limit stored with the resource, else 1, a mutex
	// (StoredLimit). When processes disagree, the limit already in force
	// wins (see Status.DriftLimit), and a live limit (SetLimit) wins
	// over every process's.
	Limit int
	// Weight is the slots to take (default 1).
	Weight int
	// Exclusive takes the whole limit: the limit in force when it is
	// granted (see Request.Exclusive), which may differ from Limit.
	Exclusive bool
	// Mode: Fail (default) or Wait.
	Mode Mode
	// TTL overrides the Governor's lease TTL. The lease's heartbeat and
	// safety margin are then those Options set, or derived from this TTL
	// by the rules of leasetiming.Timing where Options left them zero.
	TTL time.Duration
	// NoHeartbeat takes a lease that does not renew itself: the caller
	// detaches it (Lease.Detach) and renews it by its Handle
	// (Governor.RenewHandle), as
	// `governor acquire` does for a shell script. No heartbeat is then
	// checked against its TTL.
	NoHeartbeat bool
	// ProgressTimeout, when set, makes the lease lost once no progress
	// mark (Governor.Touch, by any process) has arrived for this long:
	// the backend refuses its renewals from then on (see
	// Declaration.ProgressTimeout), so the heartbeat declares it lost
	// (Done closes) within one heartbeat, while the slot is still held.
	ProgressTimeout time.Duration
	// Policy is the resource's queue policy (the zero value: strict
	// FIFO). Every process on a resource must ask for the same one: the
	// policy in force changes only while the resource is idle, and a
	// different one asked for meanwhile is drift (Status.DriftPolicy).
	Policy Policy
	// Priority names this acquire's class of Policy ("": the default
	// class, see Policy.Rules); FairKey its fair key ("": none).
	Priority string
	FairKey  string
	// Supersede, when set, is this acquire's supersede key: an older
	// waiter with the same key on the resource is withdrawn (its
	// Acquire returns ErrSuperseded); with CancelInProgress (Wait mode
	// only), a holder with the key is cancelled: its next renewal is
	// refused (its Done closes within a heartbeat, Err a *LeaseLostError
	// of kind eventkind.CancelledInProgress), but it keeps its slots until its
	// Release (or its expiry), so that its work never runs beside this
	// acquire's, which waits in the queue meanwhile. GitHub Actions'
	// concurrency groups.
	Supersede        string
	CancelInProgress bool
	// CancelOthers lets CancelInProgress cancel a holder of another OS
	// user (Declaration.User): without it, that acquire fails with
	// ErrInvalid naming the holder and its user, changing nothing.
	CancelOthers bool
	// OnQueued, if set, is called each time a waiting acquire learns its
	// place in the queue (for a status line).
	OnQueued func(Result)
	// GiveUpOnBackendError, if set, ends a waiting acquire at the first
	// failure to reach the backend (it returns that error, leaving
	// nothing behind), instead of riding it out: for degraded mode.
	GiveUpOnBackendError bool
}

// Acquire takes weight slots of resource. On success it returns a Lease
// that heartbeats itself until Release (or, for a resource of
// Options.Capacity, a slot of the process's share). In Fail mode a
// resource without room is a *BusyError (errors.Is ErrBusy); in Wait
// mode the call queues in FIFO order until granted or ctx ends, and then
// returns ctx.Err() (or the backend's error that wraps it, saying why,
// such as the file backend's LockWaitError: errors.Is ctx.Err() either
// way) leaving no waiter and no lease behind; if Close ends the wait, it
// returns ErrClosed, leaving nothing behind either; if someone withdraws
// the waiter (Cancel), a *WithdrawnError (errors.Is ErrWithdrawn) saying
// who and why. Bad input is ErrInvalid or ErrTooHeavy with nothing changed.
func (g *Governor) Acquire(ctx context.Context, resource string, o AcquireOptions) (*Lease, error) {
	o, err := g.withStoredLimit(ctx, resource, o)
	if err != nil {
		return nil, err
	}
	req, tm, err := g.request(resource, o)
	if err != nil {
		return nil, err
	}
	if err := g.enter(); err != nil {
		return nil, err
	}
	defer g.active.Done()
	return g.acquire(ctx, req, tm, o.OnQueued, o.GiveUpOnBackendError)
}

// request checks o and returns the backend request and the lease's
// timing.
func (g *Governor) request(resource string, o AcquireOptions) (Request, leasetiming.Timing, error) {
	if err := ValidateResource(resource); err != nil {
		return Request{}, leasetiming.Timing{}, err
	}
	if err := ValidateLimit(resource, o.Limit); err != nil {
		return Request{}, leasetiming.Timing{}, err
	}
	w, err := ResolveWeight(resource, o.Weight, o.Limit, o.Exclusive)
	if err != nil {
		return Request{}, leasetiming.Timing{}, err
	}
	tm, err := g.leaseTiming(o.TTL, o.NoHeartbeat)
	if err != nil {
		return Request{}, leasetiming.Timing{}, fmt.Errorf("%w (lease of %s)", err, resource)
	}
	if o.Mode != Fail && o.Mode != Wait {
		return Request{}, leasetiming.Timing{}, invalid("mode %d; allowed: Fail, Wait", o.Mode)
	}
	if o.ProgressTimeout < 0 || (o.ProgressTimeout > 0 && o.ProgressTimeout < time.Millisecond) {
		return Request{}, leasetiming.Timing{}, invalid("progress timeout %v (lease of %s); allowed: 0 (none) or at least 1ms", o.ProgressTimeout, resource)
	}
	decl := g.decl
	decl.ProgressTimeout = o.ProgressTimeout
	if !o.Policy.IsZero() || o.Priority != "" || o.FairKey != "" {
		if err := o.Policy.checkRequest(resource, o.Limit, w, o.Priority, o.FairKey); err != nil {
			return Request{}, leasetiming.Timing{}, err
		}
		if c, _ := o.Policy.Rules().ClassIndex(o.Priority); len(o.Policy.Classes) > 0 {
			decl.Priority = o.Policy.Classes[c].Name
		}
		decl.FairKey = o.FairKey
	}
	if o.Supersede != "" && !validPolicyName(o.Supersede) {
		return Request{}, leasetiming.Timing{}, invalid("supersede key %q for %s; allowed: %s", o.Supersede, resource, policyNameRule)
	}
	if o.CancelInProgress && o.Supersede == "" {
		return Request{}, leasetiming.Timing{}, invalid("cancel-in-progress for %s without a supersede key; allowed: with Supersede only", resource)
	}
	if o.CancelOthers && !o.CancelInProgress {
		return Request{}, leasetiming.Timing{}, invalid("cancel-others for %s without cancel-in-progress; allowed: with CancelInProgress only", resource)
	}
	if o.CancelInProgress && o.Mode != Wait {
		return Request{}, leasetiming.Timing{}, invalid("cancel-in-progress for %s in Fail mode; allowed: in Wait mode only (the cancelled holder keeps its slots until its work has stopped)", resource)
	}
	secret, id := newSecret()
	return Request{Key: Key{g.project, resource}, ID: id, Secret: secret, Limit: o.Limit, Weight: w, Exclusive: o.Exclusive,
		TTL: tm.TTL, Mode: o.Mode, QueueTTL: g.queueTTL, Declaration: decl,
		Policy: o.Policy.Encode(), Priority: decl.Priority, FairKey: o.FairKey,
		Supersede: o.Supersede, CancelInProgress: o.CancelInProgress, CancelOthers: o.CancelOthers}, tm, nil
}

// leaseTiming is the timing of a lease with ttl (0: the Governor's). A
// lease with its own TTL takes the heartbeat and margin Options set, and
// derives those Options left zero from its TTL; a lease that does not
// heartbeat has only its TTL checked.
func (g *Governor) leaseTiming(ttl time.Duration, noHeartbeat bool) (leasetiming.Timing, error) {
	if ttl == 0 {
		ttl = g.timing.TTL
	}
	if noHeartbeat {
		tm := leasetiming.Timing{TTL: ttl, SafetyMargin: leasetiming.SafetyMarginFor(ttl)}
		return tm, invalidTiming(leasetiming.CheckTTL(ttl, leasetiming.Names{}))
	}
	if ttl == g.timing.TTL {
		return g.timing, nil
	}
	tm, err := leasetiming.Timing{TTL: ttl, Heartbeat: g.set.Heartbeat, SafetyMargin: g.set.SafetyMargin}.Resolve(leasetiming.Names{})
	return tm, invalidTiming(err)
}

func (g *Governor) acquire(caller context.Context, req Request, tm leasetiming.Timing, onQueued func(Result), giveUp bool) (*Lease, error) {
	if rc, ok := g.caps.cfg[req.Key.Resource]; ok {
		return g.grantLocal(caller, req, tm, rc)
	}
	ctx, cancel := context.WithCancel(caller)
	defer context.AfterFunc(g.closing, cancel)()
	defer cancel()
	var notify <-chan struct{}
	if req.Mode == Wait {
		ch, stop := g.b.Notify(ctx, req.Key, req.ID)
		defer stop()
		notify = ch
	}
	recheck := g.queueTTL / 4
	maxWait := requestMaxWait(req)
	backoff := newBackoff()
	// The re-check timer, made only when a wait needs one (most acquires
	// are granted or refused at once).
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	arm := func(d time.Duration) {
		if timer == nil {
			timer = time.NewTimer(d)
		} else {
			timer.Reset(d)
		}
	}
	req.New = true
	start := time.Now()
	for {
		mark := g.mark()
		res, err := g.b.Acquire(ctx, req)
		req.New = false
		if err == nil {
			backoff.reset()
			switch res.Outcome {
			case Granted:
				if !res.Sent.IsZero() && res.Sent.Before(mark.t) {
					mark.t = res.Sent // handed on by an earlier call (Result.Sent)
				}
				var sent time.Time
				if sent, res.Expires, err = g.fresh(ctx, req, tm, g.sentAt(mark), res.Expires); err != nil {
					continue // not acquired: queue again, within ctx
				}
				g.rec.observe(req.Key, histogram.Wait, time.Since(start))
				return g.newLease(req, res, sent, tm)
			case Refused, Queued:
				if g.reclaimDead(ctx, req.Key, res.Status) {
					continue
				}
				if res.Outcome == Refused {
					return nil, g.whyRefused(ctx, req, res.Status)
				}
				if onQueued != nil {
					onQueued(res)
				}
				// A cool-off ends with no release to wake the queue: every
				// waiter re-checks then, and the first hands out in order.
				if left := res.Status.coolingOff(); left > 0 && left < recheck {
					arm(left + time.Millisecond)
				} else {
					arm(nextRecheck(recheck, maxWait, time.Since(start)))
				}
			default:
				return nil, fmt.Errorf("%w: acquire of %s: unknown outcome %v", ErrBackend, req.Key, res.Outcome)
			}
		} else {
			if isFinal(err) || req.Mode == Fail || ctx.Err() != nil || giveUp {
				if req.Mode == Wait && !errors.Is(err, ErrWithdrawn) {
					g.cancel(req)
				}
				if ctx.Err() != nil {
					return nil, g.ended(caller, err)
				}
				return nil, err
			}
			// A waiter rides out a transport failure: the backend may be
			// restarting, and re-sending the same id re-queues it.
			arm(backoff.next())
		}
		select {
		case <-ctx.Done():
			timer.Stop()
			g.cancel(req)
			return nil, g.ended(caller, nil)
		case <-notify:
			timer.Stop()
		case <-timer.C:
		}
	}
}

// isFinal tells errors that retrying cannot cure.
func isFinal(err error) bool {
	return errors.Is(err, ErrInvalid) || errors.Is(err, ErrTooHeavy) || errors.Is(err, ErrClosed) || errors.Is(err, ErrBackend) ||
		errors.Is(err, ErrQueueFull) || errors.Is(err, ErrWithdrawn)
}

// withdrawTimeout bounds the withdrawal of a waiter whose caller gave up,
// so that a caller's deadline is overrun by no more than it (issue 18:
// a lock held by a foreign process turned --wait-timeout 2s into 10 s).
// A waiter not withdrawn in time (the backend unreachable, its lock
// held) is dropped by the backend once its queue entry expires
// (QueueTTL); a grant it got meanwhile, once the lease expires.
const withdrawTimeout = time.Second

// cancel withdraws a waiter on a fresh bounded context: the caller's has
// usually ended.
func (g *Governor) cancel(req Request) {
	ctx, cancel := context.WithTimeout(context.Background(), withdrawTimeout)
	defer cancel()
	_ = g.b.Cancel(ctx, req.Key, req.ID, req.Secret)
}

// reclaimDead removes holders on this host whose owner process is proven
// dead (SPEC invariant 2), and the cgroups their trees left
// (Declaration.RemoveDeadCgroup), and reports whether it removed any.
func (g *Governor) reclaimDead(ctx context.Context, key Key, st Status) bool {
	removed := false
	for _, h := range st.Holders {
		if g.ownerVerdict(ctx, key, h) != proc.Dead {
			continue
		}
		if res, err := g.b.Admin(ctx, key, Action{Kind: eventkind.Reclaimed, IDs: []string{h.LeaseID}, Token: h.Token}); err == nil && res.Changed {
			removed = true
			_ = h.RemoveDeadCgroup() // best effort: else the stale sweep of a later run
		}
	}
	return removed
}

// enter counts a call that must end before Close closes the backend;
// the caller calls g.active.Done() when it returns. A closed Governor is
// ErrClosed.
func (g *Governor) enter() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return ErrClosed
	}
	g.active.Add(1)
	return nil
}

// ended tells why a call's context (caller's, bounded by Close) ended:
// the caller's error, or ErrClosed. The backend's error last, when it
// is the caller's error with the backend's reason (errors.Is: the file
// backend naming the holder of a lock it waited for), stands for it.
func (g *Governor) ended(caller context.Context, last error) error {
	err := caller.Err()
	switch {
	case err == nil:
		return ErrClosed
	case last != nil && errors.Is(last, err):
		return last
	}
	return err
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
