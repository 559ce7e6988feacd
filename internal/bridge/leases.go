package bridge

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/acquire"
	"github.com/governor-dev/governor/internal/exitcode"
	"github.com/governor-dev/governor/internal/words"
)

// errShuttingDown refuses what arrives while the bridge shuts down.
var errShuttingDown = errors.New("the bridge is shutting down: nothing is held")

// lease is one bridge lease ("L1"): what one acquire or takeover took.
type lease struct {
	id   string
	held Held
	// released closes when the client (or the bridge's end) releases it:
	// its watcher then stops.
	released chan struct{}

	mu    sync.Mutex
	state leaseState
	why   string // what ended it, once lost
	// settled: the spend reservation was settled (settle), or is being.
	settled bool
	// providers and tokens are the acquire's: tokens were reserved on
	// each provider's rate budget; provider_report's used_tokens settles
	// them once per provider (tokensSettled).
	providers     []string
	tokens        int64
	tokensSettled []string
	// price is the price table's price of the call (nil: none): what a
	// provider_report's usage costs.
	price *governor.Price
	// unwatch stops the watcher of a lease of one governor lease (watch)
	// before the bridge releases it.
	unwatch func()
}

type leaseState int

const (
	stateHeld leaseState = iota
	stateLost
	stateReleased
)

// resourceResult is one resource of an acquire's result.
type resourceResult struct {
	Resource  string     `json:"resource"`
	Handle    string     `json:"handle"`
	LeaseID   string     `json:"lease_id"`
	Token     int64      `json:"token"`
	Weight    int        `json:"weight,omitempty"`
	Nested    bool       `json:"nested"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
}

// acquireResult is the result of acquire, takeover and provider_acquire.
type acquireResult struct {
	Lease     string            `json:"lease"`
	Resources []resourceResult  `json:"resources"`
	Nested    []string          `json:"nested"`
	Env       map[string]string `json:"env"`
	Waited    float64           `json:"waited"`
	Notes     []string          `json:"notes,omitempty"`
	Taken     []takenResult     `json:"taken,omitempty"`
	Provider  string            `json:"provider,omitempty"`
	Record    *recordResult     `json:"record,omitempty"`
	Budgets   []budgetResult    `json:"budgets,omitempty"`
}

// recordResult is what a wait record says of an acquire's resources,
// built as governor run --record builds it (acquire.RecordOf).
type recordResult struct {
	Resources []acquire.RecordResource `json:"resources"`
	Nested    bool                     `json:"nested"`
}

// recordOf is the record of held, when it knows its plan's items.
func recordOf(held Held) *recordResult {
	p, ok := held.(interface{ Items() []*acquire.Item })
	if !ok {
		return nil
	}
	r := &recordResult{}
	r.Resources, r.Nested = acquire.RecordOf(p.Items())
	return r
}

// add registers held as a new bridge lease and returns the result that
// names it; the lease's watcher starts after the reply is sent (start).
// When the bridge is shutting down, held is released and add fails.
func (s *server) add(held Held, env []string) (*lease, *acquireResult, error) {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		(&lease{held: held}).settleAtEstimate()
		releaseHeld(held)
		return nil, nil, errShuttingDown
	}
	s.nextID++
	l := &lease{id: "L" + strconv.Itoa(s.nextID), held: held, released: make(chan struct{})}
	s.leases[l.id] = l
	s.mu.Unlock()
	res := &acquireResult{Lease: l.id, Nested: held.Nested(), Env: map[string]string{}}
	if res.Nested == nil {
		res.Nested = []string{}
	}
	for _, gl := range held.Leases() {
		exp := gl.Expires().UTC()
		res.Resources = append(res.Resources, resourceResult{Resource: gl.Resource(), Handle: gl.Handle().String(),
			LeaseID: gl.ID(), Token: gl.Token(), Weight: gl.Weight(), ExpiresAt: &exp})
	}
	if anc, err := acquire.HeldFromEnv(env); err == nil {
		for _, name := range res.Nested {
			for _, h := range anc {
				if h.Key.Resource == name {
					res.Resources = append(res.Resources, resourceResult{Resource: name, Handle: h.Handle().String(),
						LeaseID: h.LeaseID, Token: h.Token, Nested: true})
				}
			}
		}
	}
	if res.Resources == nil {
		res.Resources = []resourceResult{}
	}
	for _, kv := range held.Env() {
		k, v, _ := strings.Cut(kv, "=")
		res.Env[k] = v
	}
	return l, res, nil
}

// watch pushes the lost event of l once any of its leases is lost, and
// releases the rest of it. With one lease (most acquires) nothing waits
// meanwhile (governor.Lease.AfterDone); with more, a goroutine merges
// them (Held.Lost).
func (s *server) watch(l *lease) {
	s.watchers.Add(1)
	if ls := l.held.Leases(); len(ls) == 1 {
		stop := ls[0].AfterDone(func() {
			defer s.watchers.Done()
			s.lost(l)
		})
		l.mu.Lock()
		l.unwatch = func() {
			if stop() {
				s.watchers.Done()
			}
		}
		l.mu.Unlock()
		return
	}
	go func() {
		defer s.watchers.Done()
		select {
		case <-l.held.Lost():
			s.lost(l)
		case <-l.released:
		}
	}()
}

// lost ends l as lost, unless it was released or lost already: it tells
// the client and releases the rest of it.
func (s *server) lost(l *lease) {
	resource, why := lostReason(l.held)
	l.mu.Lock()
	if l.state != stateHeld {
		l.mu.Unlock()
		return
	}
	l.state, l.why = stateLost, resource+": "+why
	l.mu.Unlock()
	_ = s.out.send(lostEvent{Event: "lost", Lease: l.id, Resource: resource, Reason: why, Code: exitcode.LeaseLost})
	releaseHeld(l.held)
}

type lostEvent struct {
	Event    string `json:"event"`
	Lease    string `json:"lease"`
	Resource string `json:"resource"`
	Reason   string `json:"reason"`
	Code     int    `json:"code"`
}

// lostReason names the resource of held that was lost and why.
func lostReason(held Held) (resource, why string) {
	for _, gl := range held.Leases() {
		err := gl.Err()
		if err == nil {
			continue
		}
		var lost *governor.LeaseLostError
		if errors.As(err, &lost) {
			return gl.Resource(), lost.Reason()
		}
		return gl.Resource(), words.Message(err)
	}
	return strings.Join(held.Nested(), ","), "the slot is no longer held"
}

// release releases l for the client, its spend reservation settled at
// its estimate unless settled before; it reports whether l was still
// held (false: it had been lost, and why says why).
func (l *lease) release() (held bool, why string) {
	held, why, _, _ = l.releaseSettle(nil)
	return held, why
}

// releaseSettle is release with l's spend reservation settled at actual
// (nil: every budget at its estimate), unless settled before, with the
// release of its slot (one round trip on Redis); a lost lease settles
// alone (the call it guarded may have run). st and serr are the
// settle's outcome (zero when l reserved nothing); a settle that fails
// leaves the estimate counted.
func (l *lease) releaseSettle(actual []governor.BudgetAmount) (held bool, why string, st settleResult, serr error) {
	l.mu.Lock()
	state := l.state
	if state == stateHeld {
		l.state = stateReleased
		close(l.released)
	}
	why, unwatch := l.why, l.unwatch
	l.mu.Unlock()
	if unwatch != nil {
		unwatch()
	}
	if state != stateHeld {
		if r := spendOfHeld(l.held); r != nil {
			st, serr = l.settle(context.Background(), r, actual)
		}
		return false, why, st, serr
	}
	st, serr = l.settleWithRelease(actual)
	return true, "", st, serr
}

// releaseHeld releases held whatever the request's context: each lease
// releases with its own bounded context (governor.Lease.Release).
func releaseHeld(held Held) {
	_ = held.Release(context.Background())
}

// leaseArgs name a bridge lease.
type leaseArgs struct {
	Lease string `json:"lease"`
}

// lookup returns the bridge lease id names.
func (s *server) lookup(id string) (*lease, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.leases[id]
	if !ok {
		return nil, badRequest("unknown lease %q; allowed: a lease this bridge handed out and that was not released", id)
	}
	return l, nil
}

// held returns the bridge lease id names while it is held; a lost one is
// a lost error.
func (s *server) held(id string) (*lease, error) {
	l, err := s.lookup(id)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state == stateLost {
		return nil, lostError("lease %s (%s) was lost", l.id, l.why)
	}
	return l, nil
}

// forget drops l from the bridge's leases: its id is unknown from now.
func (s *server) forget(l *lease) {
	s.mu.Lock()
	delete(s.leases, l.id)
	s.mu.Unlock()
}

func opRelease(ctx context.Context, s *server, req request) (any, error) {
	var a leaseArgs
	if err := decodeArgs(req.Args, &a); err != nil {
		return nil, err
	}
	l, err := s.lookup(a.Lease)
	if err != nil {
		return nil, err
	}
	s.forget(l)
	if ok, why := l.release(); !ok {
		return nil, lostError("lease %s (%s) was lost", l.id, why)
	}
	return nil, nil
}

func opTouch(ctx context.Context, s *server, req request) (any, error) {
	var a leaseArgs
	if err := decodeArgs(req.Args, &a); err != nil {
		return nil, err
	}
	l, err := s.held(a.Lease)
	if err != nil {
		return nil, err
	}
	for _, gl := range l.held.Leases() {
		if gl.Token() == 0 {
			continue // a grant from a capacity share: no lease of its own to mark
		}
		if err := s.g.TouchHandle(ctx, gl.Handle()); err != nil {
			return nil, err
		}
	}
	return map[string]time.Time{"progress_at": time.Now().UTC()}, nil
}

type seqArgs struct {
	Lease    string `json:"lease"`
	Name     string `json:"name"`
	Resource string `json:"resource"`
}

// opSeqNext is 'governor seq next': the next number of a fenced
// sequence, for the holder of one of the lease's resources.
func opSeqNext(ctx context.Context, s *server, req request) (any, error) {
	var a seqArgs
	if err := decodeArgs(req.Args, &a); err != nil {
		return nil, err
	}
	if a.Name == "" {
		return nil, badRequest("seq_next needs a sequence name")
	}
	l, err := s.held(a.Lease)
	if err != nil {
		return nil, err
	}
	var gl *governor.Lease
	for _, c := range l.held.Leases() {
		if a.Resource == "" || c.Resource() == a.Resource {
			gl = c
			break
		}
	}
	if gl == nil {
		return nil, badRequest("lease %s holds no resource %q of its own; allowed: one it acquired", l.id, a.Resource)
	}
	if err := gl.Err(); err != nil {
		return nil, lostError("lease %s (%s): %v", l.id, gl.Resource(), words.Message(err))
	}
	if gl.Token() == 0 {
		return nil, badRequest("lease %s: %s is granted from a capacity share (capacity: true), which has no fencing token; allowed: a resource without capacity", l.id, gl.Resource())
	}
	n, err := s.g.NextSeq(ctx, a.Name, gl.Token())
	if errors.Is(err, governor.ErrStaleToken) {
		return nil, &protoError{kind: kindBusy, code: exitcode.Busy,
			msg: fmt.Sprintf("sequence %s: refused: %v; the lease was taken over, stop writing", a.Name, err)}
	}
	if err != nil {
		return nil, err
	}
	return map[string]any{"sequence": a.Name, "number": n, "token": gl.Token()}, nil
}
