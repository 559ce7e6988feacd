package bridge

import (
	"context"
	"errors"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/governor-dev/governor/governor"
)

// opFunc answers one request: its result, or the error to reply with.
type opFunc func(ctx context.Context, s *server, req request) (any, error)

// ops are the ops of protocol 1 beside hello and bye (server.go).
var ops = map[string]opFunc{
	"acquire": opAcquire, "release": opRelease, "touch": opTouch, "seq_next": opSeqNext,
	"takeover": opTakeover, "cancel_request": opCancelRequest,
	"slots": opSlots, "events": opEvents, "cancel": opCancel, "pause": opPause, "resume": opResume, "limit": opLimit,
	"provider_acquire": opProviderAcquire, "provider_release": opRelease, "provider_report": opProviderReport,
	"backoff": opBackoff, "settle": opSettle, "redact": opRedact,
}

func opNames() string {
	names := []string{"hello", "bye"}
	for n := range ops {
		names = append(names, n)
	}
	sort.Strings(names[2:])
	return strings.Join(names, ", ")
}

// thenReply is a result whose follow-up runs once its reply is sent: a
// lease's watcher starts after the reply that names it, so that its
// lost event never comes first. before, if any, is an event sent just
// before the reply, in the same write (one wake-up of the client).
type thenReply struct {
	result any
	before any
	then   func()
}

type queuedEvent struct {
	Event    string `json:"event"`
	Request  int64  `json:"request"`
	Resource string `json:"resource"`
	Position int    `json:"position"`
	QueueLen int    `json:"queue_len"`
}

type withdrawnEvent struct {
	Event    string `json:"event"`
	Request  int64  `json:"request"`
	Resource string `json:"resource"`
	By       string `json:"by"`
}

type grantedEvent struct {
	Event   string `json:"event"`
	Request int64  `json:"request"`
	Lease   string `json:"lease"`
}

func opAcquire(ctx context.Context, s *server, req request) (any, error) {
	a := req.acquire
	if a == nil {
		a = new(AcquireArgs)
		if err := decodeArgs(req.Args, a); err != nil {
			return nil, err
		}
	}
	if len(a.Resources) == 0 && len(a.Providers) == 0 && !a.Join && !a.Shareable && !a.ExecRun {
		return nil, badRequest("acquire needs resources (or providers), or an exec run (exec_run, join or shareable); allowed: [\"NAME\" or \"NAME:WEIGHT\", ...]")
	}
	return s.acquire(ctx, req.ID, *a, "")
}

// acquire takes a through the pipeline and registers what it took as a
// new bridge lease.
func (s *server) acquire(ctx context.Context, id int64, a AcquireArgs, provider string) (any, error) {
	start := time.Now()
	var mu sync.Mutex
	var notes []string
	ev := Events{
		OnQueued: func(resource string, r governor.Result) {
			_ = s.out.send(queuedEvent{Event: "queued", Request: id, Resource: resource, Position: r.Position, QueueLen: r.Status.QueueLen()})
		},
		OnNote: func(msg string) {
			mu.Lock()
			notes = append(notes, msg)
			mu.Unlock()
		},
	}
	sp, err := s.planSpend(a)
	if err != nil {
		return nil, err
	}
	a.spend = sp
	if sp != nil && len(sp.Budgets) == 0 {
		ev.OnNote("no spend budget applies to this call (see 'governor budgets'): its cost is not reserved")
	}
	held, err := s.c.Acquire(ctx, s.g, a, ev)
	var gone *governor.WithdrawnError
	if errors.As(err, &gone) {
		_ = s.out.send(withdrawnEvent{Event: "withdrawn", Request: id, Resource: gone.Resource, By: gone.By})
	}
	if err != nil {
		return nil, err
	}
	l, res, err := s.add(held, a.EnvList())
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.providers, l.tokens = a.Providers, int64(a.Tokens)
	if sp != nil && sp.Priced {
		l.price = &sp.Price
	}
	l.mu.Unlock()
	res.Waited = time.Since(start).Seconds()
	mu.Lock()
	res.Notes = notes
	mu.Unlock()
	res.Provider = provider
	if sp != nil {
		res.Budgets = budgetsOf(spendOfHeld(held), sp.Budgets)
	}
	if a.Record {
		res.Record = recordOf(held)
	}
	return thenReply{result: res, before: grantedEvent{Event: "granted", Request: id, Lease: l.id},
		then: func() { s.watch(l) }}, nil
}

type cancelRequestArgs struct {
	Request int64 `json:"request"`
}

// opCancelRequest ends a request in flight (a waiting acquire): it then
// replies with kind cancelled. A request no longer in flight is no error.
func opCancelRequest(ctx context.Context, s *server, req request) (any, error) {
	var a cancelRequestArgs
	if err := decodeArgs(req.Args, &a); err != nil {
		return nil, err
	}
	if a.Request == req.ID {
		return nil, badRequest("cancel_request %d names itself; allowed: another request in flight", a.Request)
	}
	s.mu.Lock()
	cancel := s.inflight[a.Request]
	s.mu.Unlock()
	if cancel != nil {
		cancel(errCancelled)
	}
	return nil, nil
}
