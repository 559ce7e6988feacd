package bridge

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/governor-dev/governor/config"
	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/proc"
	"github.com/governor-dev/governor/internal/exitcode"
)

// Config is what a bridge needs from its command.
type Config struct {
	// Version is governor's release version ("0.1.0") and Commit the
	// commit it was built from, told in hello's result.
	Version, Commit string
	// Open opens the Governor whose leases are declared as owned by the
	// client process pid, with session ("": the default one). The bridge
	// closes it when it ends.
	Open func(ctx context.Context, pid int, session string) (*governor.Governor, error)
	// Acquire is the acquire pipeline.
	Acquire Pipeline
	// LimitFor is the limit of resource, configured or asked (flag) as
	// the CLI's --limit: for takeover.
	LimitFor func(resource string, flag int) (limit int, origin string, err error)
	// ProviderLimits are a provider's configured limits.
	ProviderLimits func(name string) governor.ProviderLimits
	// Spend is the configuration whose budgets (budgets.NAME) and prices
	// a call is charged and priced by: the budgets an acquire names, those
	// whose scope holds it, the price of its provider and model (zero:
	// none configured).
	Spend config.Config
	// Backend names the backend in hello's result ("file", "redis").
	Backend string
	// Stderr is where the bridge tells a human what it could tell no
	// client (default os.Stderr): the failures of releases not waited
	// for that no request took, at its end.
	Stderr io.Writer
	// OwnerPoll is how often the client's pid is checked (default
	// DefaultOwnerPoll): a client that died while a forked child keeps
	// the pipe open ends the bridge by this.
	OwnerPoll time.Duration
}

// DefaultOwnerPoll is Config.OwnerPoll's default.
const DefaultOwnerPoll = 200 * time.Millisecond

// server is one bridge's state.
type server struct {
	c   Config
	out *out
	// ctx ends when the bridge shuts down: every request in flight ends
	// with it.
	ctx    context.Context
	cancel context.CancelFunc
	g      *governor.Governor
	pid    int
	start  uint64

	mu       sync.Mutex
	leases   map[string]*lease
	nextID   int
	inflight map[int64]context.CancelCauseFunc
	closing  bool
	handlers sync.WaitGroup
	watchers sync.WaitGroup

	// turns hands the turn to read to an idle goroutine (nextTurn), of
	// which idle are waiting.
	turns chan turn
	idle  atomic.Int32
	// requests counts the requests read: Serve's loop sees from it that
	// the bridge is at rest (restMemory).
	requests atomic.Uint64
	// owner hands Serve's loop the end of the client's process as hello
	// watches it (proc.Exited), where it can be watched without polling;
	// ownerStop (under mu) ends that watch, at shutdown.
	owner     chan (<-chan struct{})
	ownerStop func()
	// resting is set while Serve's loop, at rest with the client watched
	// so, has stopped its ticker; the next request read wakes it (woke).
	resting atomic.Bool
	woke    chan struct{}
	// quiet: the requests not waited for (noreply.go).
	quiet quiet
}

// turn is the turn to read requests: the input, and where its end is
// told (Serve).
type turn struct {
	r    *bufio.Reader
	done chan<- error
}

// maxIdle bounds the goroutines kept waiting for a turn to read.
const maxIdle = 8

// Serve runs a bridge on in and out until in ends, the client says bye or
// dies, or ctx ends; it then releases every lease it holds and returns
// nil. Only a failure to read in is returned.
func Serve(ctx context.Context, in io.Reader, w io.Writer, c Config) error {
	if c.OwnerPoll == 0 {
		c.OwnerPoll = DefaultOwnerPoll
	}
	if c.Stderr == nil {
		c.Stderr = os.Stderr
	}
	s := &server{c: c, out: newOut(w), leases: map[string]*lease{}, inflight: map[int64]context.CancelCauseFunc{},
		turns: make(chan turn), owner: make(chan (<-chan struct{}), 1), woke: make(chan struct{}, 1)}
	s.ctx, s.cancel = context.WithCancel(ctx)
	defer s.shutdown()
	in, restore := pollable(in)
	defer restore()
	// The goroutine that reads a request runs it (read): no hop through
	// another goroutine before an op starts (each hop is a wake-up on a
	// loaded machine). This loop watches the client's pid and ctx.
	readErr := make(chan error, 1)
	go s.read(bufio.NewReaderSize(in, 64<<10), readErr)
	// The ticker polls the client's pid, until hello watches its process
	// without polling (owner); then it only finds the bridge at rest, and
	// stops there until the next request (resting): an idle bridge
	// wakes for nothing.
	tick := time.NewTicker(c.OwnerPoll)
	defer tick.Stop()
	var rest restMemory
	var ownerGone <-chan struct{}
	for {
		select {
		case <-s.ctx.Done():
			if ctx.Err() == nil {
				// bye shut it down: its reply, which comes after, is
				// written before Serve returns (its process may exit).
				return <-readErr
			}
			return nil
		case err := <-readErr:
			return err
		case ownerGone = <-s.owner:
		case <-ownerGone:
			return nil
		case <-s.woke:
			tick.Reset(c.OwnerPoll)
		case now := <-tick.C:
			ownerTicks.Add(1)
			if ownerGone == nil {
				s.mu.Lock() // hello (on the reader) sets them
				pid, start := s.pid, s.start
				s.mu.Unlock()
				if pid != 0 && proc.Check(pid, start) == proc.Dead {
					return nil
				}
			}
			if rest.tick(now, s.requests.Load()) && ownerGone != nil {
				tick.Stop()
				s.resting.Store(true)
				if s.requests.Load() != rest.seen && s.resting.CompareAndSwap(true, false) {
					tick.Reset(c.OwnerPoll) // a request came in between
				}
			}
		}
	}
}

// ownerTicks counts the ticks of Serve's loop (a test reads it).
var ownerTicks atomic.Int64

// restAfter is how long a bridge reads no request before it is at rest:
// it then returns the memory its requests left behind to the system,
// once (restMemory).
const restAfter = time.Second

// freeOSMemory returns the heap's free memory to the system (a test
// counts its calls).
var freeOSMemory = debug.FreeOSMemory

// restMemory returns a bridge's garbage to the system once it is at
// rest. A client's bridge spends most of its life waiting for the next
// request, and the Go heap grows to 4 MiB (its smallest goal) before a
// first collection, so that a bridge holding a few leases kept ~3.5 MiB
// of garbage resident, as much again as its live data, until it ended.
// One collection per pause in the traffic (not per request, nor while
// requests keep coming) costs a few hundred microseconds of CPU; the
// heap's growth and collections while requests come are the runtime's
// defaults, untouched.
type restMemory struct {
	seen  uint64    // requests read at the last tick
	since time.Time // when seen last changed
	freed bool      // since then
}

// tick is called with the time and the count of requests read; it frees
// once the count has not moved for restAfter, and tells whether it has
// (the bridge is at rest).
func (r *restMemory) tick(now time.Time, requests uint64) bool {
	if r.since.IsZero() || requests != r.seen {
		r.seen, r.since, r.freed = requests, now, false
		return false
	}
	if !r.freed && now.Sub(r.since) >= restAfter {
		r.freed = true
		freeOSMemory()
	}
	return r.freed
}

// read reads requests from r and dispatches them, until r ends (nil),
// the client says bye (nil) or reading fails (the error), which it sends
// on done. An op that is not answered at once runs on this goroutine,
// which first hands the reading on (handOn): one goroutine reads at a
// time, in order. Then it waits for a turn to read again (nextTurn).
func (s *server) read(r *bufio.Reader, done chan<- error) {
	for {
		line, err := readLine(r)
		if errors.Is(err, errLineTooLong) {
			_ = s.out.send(reply{Error: toWire(badRequest("%v", err), s.code)})
			continue
		}
		if errors.Is(err, io.EOF) {
			done <- nil
			return
		}
		if err != nil {
			done <- err
			return
		}
		if s.ctx.Err() != nil {
			done <- nil
			return
		}
		if len(line) == 0 {
			continue
		}
		s.requests.Add(1)
		if s.resting.Load() && s.resting.CompareAndSwap(true, false) {
			s.woke <- struct{}{} // Serve's loop stopped its ticker at rest
		}
		var req request
		if err := json.Unmarshal(line, &req); err != nil {
			_ = s.out.send(reply{Error: toWire(badRequest("not a request: %v", err), s.code)})
			continue
		}
		if req.Op == "bye" {
			// After the releases not waited for: its reply carries their
			// failures no request took.
			owed := s.settleQuiet()
			s.shutdown()
			if owed != nil {
				s.answer(req.ID, nil, &owedError{owed: owed})
			} else {
				_ = s.out.send(reply{ID: req.ID, OK: true, Result: struct{}{}})
			}
			done <- nil
			return
		}
		run, quick := s.dispatch(req)
		if run == nil {
			continue
		}
		switch {
		case r.Buffered() > 0 && !req.NoReply:
			// More requests arrived with this one (a client's threads or
			// promises at once): start each at once and read on, so that
			// they reach the backend together, in one batched call.
			go run()
			continue
		case quick:
			// Answered in a call or two to the backend, and nothing else
			// to read yet (or a release not waited for, which the next
			// request waits for anyway: noreply.go): run here, with no
			// hand-off (a wake-up of another goroutine, often of another
			// thread, per request).
			// A request that arrives meanwhile is read once it ends (the
			// backend's timeouts and the bridge's end bound it).
			run()
			continue
		}
		s.handOn(turn{r, done})
		run()
		t, ok := s.nextTurn()
		if !ok {
			return
		}
		r, done = t.r, t.done
	}
}

// handOn gives the turn to read to an idle goroutine, else to a new one.
func (s *server) handOn(t turn) {
	select {
	case s.turns <- t:
	default:
		go s.read(t.r, t.done)
	}
}

// nextTurn waits for the turn to read: the goroutines that ran ops serve
// the next requests, their stacks grown already (a new goroutine grew
// its stack, copying it, on every request). At most maxIdle wait; the
// others end at once, and all of them when the bridge shuts down.
func (s *server) nextTurn() (turn, bool) {
	if s.idle.Add(1) > maxIdle {
		s.idle.Add(-1)
		return turn{}, false
	}
	defer s.idle.Add(-1)
	select {
	case t := <-s.turns:
		return t, true
	case <-s.ctx.Done():
		return turn{}, false
	}
}

// dispatch answers req at once when it can (hello: nothing else may run
// before it; a refusal), or returns the op to run, registered in flight:
// read runs it on its own goroutine, so that a wait holds up nothing,
// unless quick: the op never waits for a slot (a release, a report, a
// touch, an acquire that fails or skips when busy), so read may run it
// itself. A noreply op is quick.
func (s *server) dispatch(req request) (run func(), quick bool) {
	if req.ID <= 0 {
		_ = s.out.send(reply{ID: req.ID, Error: toWire(badRequest("request id %d; allowed: a positive integer", req.ID), s.code)})
		return nil, false
	}
	if !req.NoReply && req.Op != "hello" && req.Op != "cancel_request" {
		// In the pipe's order: after the releases not waited for before
		// it, and refused, not run, when one of them failed.
		if owed := s.settleQuiet(); owed != nil {
			s.answer(req.ID, nil, &owedError{owed: owed, refused: fmt.Sprintf("request %d (%s)", req.ID, req.Op)})
			return nil, false
		}
	}
	if req.NoReply && !noReplyOps[req.Op] {
		s.reply(req, nil, badRequest("%s with noreply; allowed: noreply on release, provider_release and provider_report", req.Op))
		return nil, false
	}
	if req.Op == "hello" || s.g == nil {
		var result any
		err := protocolError("the first request must be hello, not %q", req.Op)
		if req.Op == "hello" {
			result, err = s.hello(req.Args)
		}
		s.reply(req, result, err)
		return nil, false
	}
	op, ok := ops[req.Op]
	if !ok {
		s.reply(req, nil, badRequest("unknown op %q; allowed: %s", req.Op, opNames()))
		return nil, false
	}
	switch req.Op {
	case "release", "provider_release", "provider_report", "touch", "settle":
		quick = true
	case "acquire":
		req.acquire = new(AcquireArgs)
		if err := decodeArgs(req.Args, req.acquire); err != nil {
			s.reply(req, nil, err)
			return nil, false
		}
		quick = req.acquire.IfBusy != "wait" && req.acquire.WaitTimeout == 0
	}
	ctx, cancel := context.WithCancelCause(s.ctx)
	s.mu.Lock()
	if s.closing { // shutdown waits for the handlers: no new one now
		s.mu.Unlock()
		cancel(nil)
		s.reply(req, nil, errShuttingDown)
		return nil, false
	}
	if _, dup := s.inflight[req.ID]; dup {
		s.mu.Unlock()
		cancel(nil)
		s.reply(req, nil, badRequest("request id %d is already in flight; allowed: an id unique among requests in flight", req.ID))
		return nil, false
	}
	s.inflight[req.ID] = cancel
	s.handlers.Add(1)
	if req.NoReply {
		s.quiet.inflight.Add(1) // by the reader only, as settleQuiet's Wait
	}
	s.mu.Unlock()
	return func() {
		defer s.handlers.Done()
		result, err := op(ctx, s, req)
		if err != nil && errors.Is(context.Cause(ctx), errCancelled) {
			err = errCancelled
		}
		s.mu.Lock()
		delete(s.inflight, req.ID)
		s.mu.Unlock()
		cancel(nil)
		s.reply(req, result, err)
		if req.NoReply {
			s.quiet.inflight.Done() // its failure owed first
		}
	}, quick
}

// reply answers req: its reply, or, for a request not waited for,
// nothing when it succeeded and its failure owed (noreply.go).
func (s *server) reply(req request, result any, err error) {
	switch {
	case !req.NoReply:
		s.answer(req.ID, result, err)
	case err != nil:
		s.owe(req, err)
	}
}

// answer sends the reply to request id.
func (s *server) answer(id int64, result any, err error) {
	if err != nil {
		_ = s.out.send(reply{ID: id, Error: toWire(err, s.code)})
		return
	}
	var then func()
	var msgs []any
	if t, ok := result.(thenReply); ok {
		result, then = t.result, t.then
		if t.before != nil {
			msgs = append(msgs, t.before)
		}
	}
	if result == nil {
		result = struct{}{}
	}
	_ = s.out.send(append(msgs, reply{ID: id, OK: true, Result: result})...)
	if then != nil {
		then()
	}
}

// code is err's exit-code meaning: the CLI's one mapping.
func (s *server) code(err error) int { return exitcode.For(err) }

type helloArgs struct {
	Protocol int    `json:"protocol"`
	Client   string `json:"client"`
	PID      int    `json:"pid"`
	Session  string `json:"session"`
}

type helloResult struct {
	Protocol int    `json:"protocol"`
	Version  string `json:"version"`
	Commit   string `json:"commit"`
	PID      int    `json:"pid"`
	Backend  string `json:"backend"`
	Project  string `json:"project"`
	Session  string `json:"session"`
	// Features are what this bridge takes beyond protocol 1's first
	// version: "noreply" (releases not waited for).
	Features []string `json:"features"`
}

func (s *server) hello(raw json.RawMessage) (any, error) {
	if s.g != nil {
		return nil, protocolError("hello was said already")
	}
	var a helloArgs
	if err := decodeArgs(raw, &a); err != nil {
		return nil, err
	}
	if a.Protocol != Protocol {
		return nil, protocolError("the bridge speaks protocol %d, the client (%s) protocol %d", Protocol, a.Client, a.Protocol)
	}
	if a.PID <= 0 {
		return nil, badRequest("hello pid %d; allowed: the client's own process id", a.PID)
	}
	start, err := proc.StartTime(a.PID)
	if err != nil {
		return nil, badRequest("hello pid %d: %v; allowed: the client's own, live, process id", a.PID, err)
	}
	g, err := s.c.Open(s.ctx, a.PID, a.Session)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	closing := s.closing
	if !closing {
		s.g, s.pid, s.start = g, a.PID, start
		if gone, stop, err := proc.Exited(a.PID, start); err == nil {
			s.ownerStop = stop
			s.owner <- gone // once: hello is said once
		}
	}
	s.mu.Unlock()
	if closing { // shutdown ran meanwhile: it closed no Governor
		_ = g.Close()
		return nil, errShuttingDown
	}
	return helloResult{Protocol: Protocol, Version: s.c.Version, Commit: s.c.Commit, PID: os.Getpid(), Backend: s.c.Backend,
		Project: g.Project(), Session: g.Session(), Features: []string{featureNoReply}}, nil
}

// shutdown ends every request in flight, releases every lease and closes
// the Governor. It runs once; later calls return at once.
func (s *server) shutdown() {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return
	}
	s.closing = true
	stopOwner := s.ownerStop
	s.mu.Unlock()
	if stopOwner != nil {
		stopOwner()
	}
	s.cancel()
	s.handlers.Wait()
	s.mu.Lock()
	all := make([]*lease, 0, len(s.leases))
	for _, l := range s.leases {
		all = append(all, l)
	}
	s.leases = map[string]*lease{}
	g := s.g
	s.mu.Unlock()
	for _, l := range all {
		l.release()
	}
	s.watchers.Wait()
	s.quiet.mu.Lock()
	owed := s.quiet.owed
	s.quiet.owed = nil
	s.quiet.mu.Unlock()
	if owed != nil { // no request, nor bye, took them: a human is told
		fmt.Fprintf(s.c.Stderr, "governor bridge: %v\n", &owedError{owed: owed})
	}
	if g != nil {
		_ = g.Close()
	}
}
