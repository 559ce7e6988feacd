package bridge

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/governor-dev/governor/internal/exitcode"
)

// A request with "noreply": true is a release the client does not wait
// for (docs/bridge-protocol.md, Requests not waited for): the bridge
// answers nothing when it succeeds. It keeps the order: a later request
// (one waited for) runs only once every such release before it has
// ended, so a slot one frees is free for the next acquire. A failure is
// owed: the next request waited for is refused with it, not run, and
// bye's reply carries what no request took; at the bridge's end, what is
// still owed goes to stderr.

// featureNoReply is told in hello's features: this bridge takes
// noreply requests.
const featureNoReply = "noreply"

// noReplyOps are the ops a request may send with noreply: releases,
// whose reply a client has no use for.
var noReplyOps = map[string]bool{"release": true, "provider_release": true, "provider_report": true}

// quiet is the bookkeeping of noreply requests: those in flight, and
// the failures owed to the next request waited for.
type quiet struct {
	// inflight counts the noreply requests running. Only the goroutine
	// that reads (one at a time, in turn) adds to it and waits on it.
	inflight sync.WaitGroup

	mu   sync.Mutex
	owed []owedFailure
}

// owedFailure is a noreply request that failed.
type owedFailure struct {
	id    int64
	op    string
	lease string
	err   error
}

func (f owedFailure) String() string {
	what := f.op
	if f.lease != "" {
		what += " of lease " + f.lease
	}
	return fmt.Sprintf("%s (request %d, not waited for)", what, f.id)
}

// owe records req's failure for the next request waited for. The lease
// it names, if the bridge still holds it (a provider_report refused
// before its release), is released: the client gave it up, and sends
// no release after it.
func (s *server) owe(req request, err error) {
	var a struct {
		Lease string `json:"lease"`
	}
	_ = json.Unmarshal(req.Args, &a) // best effort: the lease names it in the message
	s.quiet.mu.Lock()
	s.quiet.owed = append(s.quiet.owed, owedFailure{id: req.ID, op: req.Op, lease: a.Lease, err: err})
	s.quiet.mu.Unlock()
	if a.Lease == "" || !noReplyOps[req.Op] {
		return
	}
	if l, lerr := s.lookup(a.Lease); lerr == nil {
		s.forget(l)
		l.release()
	}
}

// settleQuiet waits for the noreply requests read before (the order of
// the pipe) and returns their failures, which it clears (nil: none).
func (s *server) settleQuiet() []owedFailure {
	s.quiet.inflight.Wait()
	s.quiet.mu.Lock()
	defer s.quiet.mu.Unlock()
	owed := s.quiet.owed
	s.quiet.owed = nil
	return owed
}

// owedError is the error a request waited for is refused with (or bye
// answered with): the failures of the noreply requests before it, with
// the kind and code of the first.
type owedError struct {
	owed []owedFailure
	// refused names the request not run ("" for bye, which runs).
	refused string
}

func (e *owedError) Error() string {
	var b strings.Builder
	for i, f := range e.owed {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s failed: %s", f, toWire(f.err, exitcode.For).Message)
	}
	if e.refused != "" {
		fmt.Fprintf(&b, "; %s was not run", e.refused)
	}
	return b.String()
}

// wire is e as an error object: the first failure's kind and code.
func (e *owedError) wire(code func(error) int) *errorMsg {
	w := toWire(e.owed[0].err, code)
	return &errorMsg{Code: w.Code, Kind: w.Kind, Message: e.Error(), Resource: w.Resource}
}
