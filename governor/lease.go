package governor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/governor-dev/governor/governor/eventkind"
	"github.com/governor-dev/governor/governor/histogram"
	"github.com/governor-dev/governor/governor/internal/capgate"
	"github.com/governor-dev/governor/governor/leasetiming"
)

// Lease is a granted acquire. It renews itself every heartbeat until
// Release. When it cannot prove it is still held — a renewal was refused,
// or none succeeded before its local deadline — it closes Done() and Err
// returns ErrLeaseLost. The local deadline is the send time of the last
// successful grant or renewal plus the TTL minus the safety margin, on
// this process's monotonic clock: the backend's expiry is never earlier,
// so the holder learns of the loss before anyone else can be granted the
// slot. A lease acquired with NoHeartbeat does not renew itself: it is
// lost at its deadline unless detached (Detach) and renewed by its
// Handle (Governor.RenewHandle).
type Lease struct {
	g      *Governor
	key    Key
	id     string
	secret string // proves id to the backend (OwnerProven)
	weight int
	token  int64
	limit  int                // the limit in force at the grant (0: not told)
	timing leasetiming.Timing // Heartbeat 0: it does not renew itself
	sent   time.Time          // when the acquire that granted it was sent (local monotonic)
	// local, when set, is a grant from a capacity share (capshare.go):
	// no heartbeat; unwatch stops the watch of its context.
	local   *capgate.Grant
	unwatch func() bool

	mu       sync.Mutex
	expires  time.Time // backend clock
	deadline time.Time // local monotonic
	err      error
	released bool
	// stalled: lost but still held in the backend (stillHeld: for want
	// of progress, or cancelled in progress), until Release frees it once
	// the work has stopped.
	stalled bool

	// The heartbeat goroutine starts only when the first renewal is due
	// (start fires): a lease released before that — most are — never
	// spawns one, and Release waits for nothing.
	start   *time.Timer
	done    chan struct{} // closed by closeDone only
	after   []*afterDone  // what AfterDone registered, until done closes
	stop    chan struct{}
	stopped chan struct{}
	renewed chan struct{} // capacity 1: a value after each successful renewal

	// Batched renewals (renewWith): waiting is true while the heartbeat
	// waits for its next renewal, due then; claimed, when another
	// lease's renewal took this one along, whose result then arrives on
	// joined (made when the heartbeat starts: most leases never start
	// one).
	waiting bool
	due     time.Time
	claimed bool
	joined  chan renewReply // capacity 1
}

// renewReply is the result of one lease's renewal sent at sent.
type renewReply struct {
	sent time.Time
	exp  time.Time
	err  error
}

// newLease makes a grant a Lease, heartbeating (a lease without a
// heartbeat is lost at its deadline unless detached or released first). A
// grant that comes back after Close began (it raced with it) is released
// at once: the result is ErrClosed, and nothing is left held.
// newLease makes the lease of grant res, its local deadline counted from
// sent; the first lease held starts the suspend watch.
func (g *Governor) newLease(req Request, res Result, sent time.Time, tm leasetiming.Timing) (*Lease, error) {
	l := &Lease{g: g, key: req.Key, id: req.ID, secret: req.Secret, weight: req.Weight, token: res.Token, limit: res.Limit, timing: tm, sent: sent,
		expires: res.Expires, deadline: sent.Add(tm.TTL - tm.SafetyMargin),
		done: make(chan struct{}), stop: make(chan struct{}), stopped: make(chan struct{}), renewed: make(chan struct{}, 1)}
	g.mu.Lock()
	closed := g.closed
	if !closed {
		if tm.Heartbeat > 0 {
			l.start = time.AfterFunc(l.nextRenewal(), l.heartbeat)
		} else {
			l.start = time.AfterFunc(time.Until(l.deadline), func() {
				defer close(l.stopped)
				l.lose(ErrLeaseLost, lostNoRenewal)
			})
		}
		g.leases[l] = struct{}{}
		if g.watches && !g.watching {
			g.watchSuspend()
		}
	}
	g.mu.Unlock()
	if closed {
		// Close waits for this call, so the backend is still open.
		ctx, cancel := context.WithTimeout(context.Background(), DefaultReleaseTimeout)
		defer cancel()
		_ = g.b.Release(ctx, req.Key, req.ID, req.Secret)
		return nil, ErrClosed
	}
	return l, nil
}

// errStaleGrant: a grant whose reply came after its lease's local
// deadline could not be renewed in time (Governor.fresh).
var errStaleGrant = errors.New("governor: the grant arrived after its lease's deadline")

// fresh checks a grant whose request was sent at sent: one whose reply
// came after the lease's local deadline (this process, or the backend,
// stalled longer than the TTL allows) is not trusted as held: it is
// renewed once, and held (the renewal's send time and expiry returned)
// only if that renewal comes back before its own deadline; otherwise it
// is released (a fresh bounded context) and errStaleGrant says to ask
// again, so that nobody starts work on a lease the backend may have
// handed on.
func (g *Governor) fresh(ctx context.Context, req Request, tm leasetiming.Timing, sent, exp time.Time) (time.Time, time.Time, error) {
	if time.Since(sent) < tm.TTL-tm.SafetyMargin {
		return sent, exp, nil
	}
	again := time.Now()
	exp, err := g.b.Renew(ctx, Renewal{Key: req.Key, ID: req.ID, Secret: req.Secret, TTL: tm.TTL}) // token 0: the backend knows its own grant's
	if err == nil && time.Since(again) < tm.TTL-tm.SafetyMargin {
		return again, exp, nil
	}
	rctx, cancel := context.WithTimeout(context.Background(), DefaultReleaseTimeout)
	defer cancel()
	_ = g.b.Release(rctx, req.Key, req.ID, req.Secret)
	return sent, exp, errStaleGrant
}

// ID is the lease id. It is public (others see it in Status, busy
// errors and events); Handle, with the secret, proves ownership.
func (l *Lease) ID() string { return l.id }

// Resource is the resource the lease holds slots of.
func (l *Lease) Resource() string { return l.key.Resource }

// Key is the lease's project and resource.
func (l *Lease) Key() Key { return l.key }

// Weight is the number of slots held.
func (l *Lease) Weight() int { return l.weight }

// Token is the fencing token: it strictly increases per resource with
// every grant, so a protected store can refuse a writer whose token is
// older than one it has seen.
func (l *Lease) Token() int64 { return l.token }

// Limit is the limit in force when the lease was granted: the one asked
// for (AcquireOptions.Limit), or a live, adaptive or stored one that won
// over it (Status tells which). 0 for a lease from a takeover,
// whose backend reply does not say.
func (l *Lease) Limit() int { return l.limit }

// Expires is the backend's expiry after the last renewal (backend clock).
func (l *Lease) Expires() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.expires
}

// Deadline is the lease's local deadline, on this process's monotonic
// clock: the send time of the last successful grant or renewal plus the
// TTL minus the safety margin. The lease is lost when it passes; the
// backend cannot grant the slot elsewhere before it.
func (l *Lease) Deadline() time.Time {
	if l.local != nil {
		return l.local.Deadline()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.deadline
}

// Renewed returns a channel that receives a value after a successful
// renewal has moved Deadline (renewals made while nobody received are
// folded into one value).
func (l *Lease) Renewed() <-chan struct{} { return l.renewed }

// Done is closed when the lease is lost or released.
func (l *Lease) Done() <-chan struct{} { return l.done }

// Err is nil while the lease is held, ErrLeaseLost after a loss (a
// *LeaseLostError when the backend said what ended it), and ErrNotHeld
// after Release. It checks the local deadline itself, so a
// holder resumed after a pause (SIGSTOP, a long GC, a suspended VM) sees
// the loss at once, before the heartbeat goroutine runs: check Err right
// before each protected write, and pass Token to the protected store.
func (l *Lease) Err() error {
	l.mu.Lock()
	err, expired := l.err, l.err == nil && !l.released && time.Now().After(l.deadline)
	l.mu.Unlock()
	if l.local != nil {
		expired = err == nil && !l.released && l.local.Err() != nil
	}
	if expired {
		l.lose(ErrLeaseLost, lostNoRenewal)
		return l.Err()
	}
	return err
}

// Context returns a context that is cancelled when the lease ends, for
// work that must stop with it.
func (l *Lease) Context(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	go func() {
		select {
		case <-l.done:
			cancel(l.Err())
		case <-ctx.Done():
		}
	}()
	return ctx, func() { cancel(context.Canceled) }
}

// heartbeat renews the lease until stopped, starting at once (start has
// waited for the first renewal). One timer per round spans both the wait
// and the renewal in flight: a renewal that hangs (a partition, a client
// that ignores its context) cannot keep the lease from being declared
// lost at its deadline. Another lease's renewal may take this one along
// (renewWith) while it waits: its result then ends the wait.
func (l *Lease) heartbeat() {
	defer close(l.stopped)
	defer func() {
		l.mu.Lock()
		l.waiting = false
		l.mu.Unlock()
	}()
	renew := time.NewTimer(0)
	defer renew.Stop()
	backoff := newBackoff()
	due := time.Now()
	l.mu.Lock()
	l.joined = make(chan renewReply, 1)
	l.mu.Unlock()
	for {
		// A result that came after its renewal gave up waiting for it
		// (its context ended) is dropped.
		select {
		case <-l.joined:
		default:
		}
		l.mu.Lock()
		deadline := l.deadline
		l.waiting, l.due = true, due
		l.mu.Unlock()
		lost := time.NewTimer(time.Until(deadline))
		var r renewReply
		joined := false
		select {
		case <-l.stop:
			lost.Stop()
			return
		case <-lost.C:
			l.lose(ErrLeaseLost, lostNoRenewal)
			return
		case r = <-l.joined:
			joined = true
		case <-renew.C:
		}
		if !joined {
			l.mu.Lock()
			claimed := l.claimed
			l.waiting = false
			l.mu.Unlock()
			// Claimed just as its own time came: the other lease's
			// renewal carries it; wait for that one.
			done := (<-chan renewReply)(l.joined)
			cancel := context.CancelFunc(func() {})
			if !claimed {
				var ctx context.Context
				ctx, cancel = context.WithDeadline(context.Background(), deadline)
				own := make(chan renewReply, 1)
				go func() { own <- l.g.renewWith(ctx, l) }()
				done = own
			}
			select {
			case <-l.stop:
				cancel()
				lost.Stop()
				return
			case <-lost.C:
				cancel()
				l.lose(ErrLeaseLost, lostNoRenewal)
				return
			case r = <-done:
				cancel()
			}
		}
		lost.Stop()
		l.mu.Lock()
		l.waiting, l.claimed = false, false
		l.mu.Unlock()
		var next time.Duration
		switch {
		case r.err == nil:
			backoff.reset()
			l.mu.Lock()
			l.expires = r.exp
			l.deadline = r.sent.Add(l.timing.TTL - l.timing.SafetyMargin)
			l.mu.Unlock()
			select {
			case l.renewed <- struct{}{}:
			default:
			}
			next = l.nextRenewal()
		case errors.Is(r.err, ErrLeaseLost), errors.Is(r.err, ErrNotHeld):
			// The backend may say what ended it (a takeover names who).
			var ended *LeaseLostError
			if errors.As(r.err, &ended) {
				l.lose(ended, ended.Reason())
			} else {
				l.lose(ErrLeaseLost, lostRefused)
			}
			return
		default:
			// Transport trouble: retry soon; the deadline decides.
			next = min(backoff.next(), l.nextRenewal())
		}
		renew.Reset(next)
		due = time.Now().Add(next)
	}
}

// maxJoined caps the leases one renewal takes along.
const maxJoined = 999

// renewWith renews l, and with it, when the backend renews in batches
// (BatchRenewer), every other heartbeating lease of g that waits for a
// renewal due within half its heartbeat, and those whose own renewal
// came while this one gathered (gatherFor): renewed early, they are then
// due together, so that a process holding many leases renews them in
// about one call per heartbeat (the backend groups them per node or
// slot). Each lease gets its own result, as from its own Renew.
func (g *Governor) renewWith(ctx context.Context, l *Lease) renewReply {
	br, ok := g.b.(BatchRenewer)
	if !ok {
		sent := time.Now()
		exp, err := g.b.Renew(ctx, Renewal{Key: l.key, ID: l.id, Secret: l.secret, Token: l.token, TTL: l.timing.TTL})
		return renewReply{sent, exp, err}
	}
	g.mu.Lock()
	if g.gathering != nil {
		// Another lease gathers a batch: go with it.
		*g.gathering = append(*g.gathering, l)
		g.mu.Unlock()
		select {
		case r := <-l.joined:
			return r
		case <-ctx.Done():
			return renewReply{time.Now(), time.Time{}, ctx.Err()}
		}
	}
	var joiners []*Lease
	g.gathering = &joiners
	g.mu.Unlock()
	// Leases due together fire within a few ms of each other: each would
	// otherwise send its own call beside the batch.
	time.Sleep(gatherFor(l.timing.Heartbeat))
	sent := time.Now()
	g.mu.Lock()
	g.gathering = nil
	others := append(joiners, g.claimDue(l, sent)...)
	g.mu.Unlock()
	rs := make([]Renewal, 0, 1+len(others))
	for _, x := range append([]*Lease{l}, others...) {
		rs = append(rs, Renewal{Key: x.key, ID: x.id, Secret: x.secret, Token: x.token, TTL: x.timing.TTL})
	}
	res := br.RenewBatch(ctx, rs)
	if len(res) != len(rs) {
		err := fmt.Errorf("%w: RenewBatch of %d leases returned %d results", ErrBackend, len(rs), len(res))
		res = make([]RenewalResult, len(rs))
		for i := range res {
			res[i].Err = err
		}
	}
	for i, x := range others {
		x.joined <- renewReply{sent, res[i+1].Expires, res[i+1].Err}
	}
	return renewReply{sent, res[0].Expires, res[0].Err}
}

// gatherFor is how long a batch of renewals waits for others due at the
// same moment: a hundredth of the heartbeat, at most 10 ms.
func gatherFor(heartbeat time.Duration) time.Duration {
	return min(heartbeat/100, 10*time.Millisecond)
}

// claimDue claims, for l's renewal at now, the other leases whose
// heartbeat waits for a renewal due within half their heartbeat. The
// caller holds g.mu.
func (g *Governor) claimDue(l *Lease, now time.Time) []*Lease {
	var out []*Lease
	for x := range g.leases {
		if x == l || x.timing.Heartbeat <= 0 {
			continue
		}
		x.mu.Lock()
		if x.waiting && !x.claimed && x.due.Sub(now) <= x.timing.Heartbeat/2 {
			x.claimed = true
			out = append(out, x)
		}
		x.mu.Unlock()
		if len(out) == maxJoined {
			break
		}
	}
	return out
}

// stopHeartbeat stops the heartbeat and waits until it no longer runs.
// Release and Detach call it once.
func (l *Lease) stopHeartbeat() {
	if l.start == nil || l.start.Stop() {
		return // it never started
	}
	close(l.stop)
	<-l.stopped
}

// nextRenewal is the heartbeat, or half the time left before the local
// deadline when that is shorter (a slow grant or renewal ate into it).
func (l *Lease) nextRenewal() time.Duration {
	l.mu.Lock()
	left := time.Until(l.deadline)
	l.mu.Unlock()
	return max(min(l.timing.Heartbeat, left/2), time.Millisecond)
}

// lose marks the lease lost with err (ErrLeaseLost, or a
// *LeaseLostError), counts it in the backend with reason and, best
// effort, frees it there (by id and secret: only this lease).
func (l *Lease) lose(err error, reason string) {
	if l.local != nil {
		l.loseLocal(err)
		return
	}
	l.mu.Lock()
	if l.err != nil {
		l.mu.Unlock()
		return
	}
	l.err = err
	var ended *LeaseLostError
	if errors.As(err, &ended) && stillHeld(ended.End.Kind) {
		// Still held: freed by Release (or Close) once the work it
		// protects has stopped, never before; or by its expiry.
		l.stalled = true
		l.closeDone()
		l.mu.Unlock()
		return
	}
	l.closeDone()
	l.mu.Unlock()
	l.g.forget(l)
	free := func() {
		ctx, cancel := context.WithTimeout(context.Background(), DefaultReleaseTimeout)
		defer cancel()
		_ = l.g.b.Record(ctx, l.key, Event{Kind: eventkind.Lost, LeaseID: l.id, Token: l.token, Detail: reason})
		_ = l.g.b.Release(ctx, l.key, l.id, l.secret)
	}
	// Close waits for this before it closes the backend; once Close has
	// begun, it waits for the heartbeat that called lose, so free runs
	// here.
	l.g.mu.Lock()
	closing := l.g.closed
	if !closing {
		l.g.losing.Add(1)
	}
	l.g.mu.Unlock()
	if closing {
		free()
		return
	}
	go func() {
		defer l.g.losing.Done()
		free()
	}()
}

// Release stops the heartbeat, then frees the slots, on a fresh context
// bounded by DefaultReleaseTimeout. It returns ErrLeaseLost if the lease
// had been lost (the protected work may have overlapped another holder),
// nil on a second call, and a backend error if the release could not be
// sent — the lease then expires after its TTL.
func (l *Lease) Release() error { return l.release(nil) }

// release is Release, sending the release through free when free is not
// nil (a release that rides on a budget settle, SettleRequest.Release).
// free is not called when the lease was lost before: nothing is sent.
func (l *Lease) release(free func(ctx context.Context, l *Lease) error) error {
	if free == nil {
		free = func(ctx context.Context, l *Lease) error { return l.g.b.Release(ctx, l.key, l.id, l.secret) }
	}
	l.mu.Lock()
	if l.released {
		l.mu.Unlock()
		return nil
	}
	l.released = true
	lostErr := l.err
	l.mu.Unlock()
	if l.local != nil {
		return l.releaseLocal(lostErr)
	}
	l.stopHeartbeat()
	if lostErr == nil {
		// The heartbeat may have lost the lease just before stopping.
		lostErr = l.Err()
	}
	l.mu.Lock()
	stalled := l.stalled
	l.mu.Unlock()
	if stalled {
		l.g.forget(l)
		ctx, cancel := context.WithTimeout(context.Background(), DefaultReleaseTimeout)
		defer cancel()
		var ended *LeaseLostError
		if errors.As(lostErr, &ended) {
			_ = l.g.b.Record(ctx, l.key, Event{Kind: eventkind.Lost, LeaseID: l.id, Token: l.token, Detail: ended.Reason()})
		}
		_ = free(ctx, l)
		return lostErr
	}
	if lostErr != nil {
		return lostErr
	}
	l.mu.Lock()
	l.err = ErrNotHeld
	l.closeDone()
	l.mu.Unlock()
	l.g.forget(l)
	ctx, cancel := context.WithTimeout(context.Background(), DefaultReleaseTimeout)
	defer cancel()
	err := free(ctx, l)
	if errors.Is(err, ErrNotHeld) {
		// Gone on the backend although our deadline had not passed: it
		// was taken over or reclaimed.
		return ErrLeaseLost
	}
	if err == nil {
		l.g.rec.observe(l.key, histogram.Hold, time.Since(l.sent))
	}
	return err
}

// Detach stops the heartbeat and forgets the lease without releasing it,
// for a lease that must outlive this process (`governor acquire` in a
// shell script): it then expires after its TTL unless renewed by its
// Handle (Governor.RenewHandle, `governor renew`). The
// lease's Done closes; Release afterwards does nothing.
func (l *Lease) Detach() {
	if l.local != nil {
		_ = l.Release() // a grant from a share ends with this process
		return
	}
	l.mu.Lock()
	if l.released {
		l.mu.Unlock()
		return
	}
	l.released = true
	l.mu.Unlock()
	l.stopHeartbeat()
	l.mu.Lock()
	if l.err == nil {
		l.err = ErrNotHeld
		l.closeDone()
	}
	l.mu.Unlock()
	l.g.forget(l)
}

// stillHeld tells whether a lease whose renewal was refused with an end
// of kind is still held in the backend, its weight kept until its holder
// releases it once its work has stopped: a stalled lease, and one
// cancelled in progress (so that its work never runs beside its
// successor's).
func stillHeld(kind string) bool {
	return kind == eventkind.Stalled || kind == eventkind.CancelledInProgress
}

func (g *Governor) forget(l *Lease) {
	g.mu.Lock()
	delete(g.leases, l)
	g.mu.Unlock()
}
