package bridge

import (
	"context"
	"errors"
	"fmt"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/exitcode"
	"github.com/governor-dev/governor/internal/view"
	"github.com/governor-dev/governor/internal/words"
)

// The error kinds of the protocol (docs/bridge-protocol.md, Errors).
const (
	kindBusy       = "busy"
	kindSkipped    = "skipped"
	kindWithdrawn  = "withdrawn"
	kindSuperseded = "superseded"
	kindLost       = "lost"
	kindFailure    = "failure"
	kindProtocol   = "protocol"
	kindBackend    = "backend"
	kindCancelled  = "cancelled"
)

// errorMsg is the error object of a reply.
type errorMsg struct {
	Code       int           `json:"code"`
	Kind       string        `json:"kind"`
	Message    string        `json:"message"`
	Resource   string        `json:"resource,omitempty"`
	Rule       string        `json:"rule,omitempty"`
	Holders    []view.Holder `json:"holders,omitempty"`
	RetryAfter *float64      `json:"retry_after,omitempty"`
	// Budget is the spend budget that refused (busy, skipped).
	Budget *budgetResult `json:"budget,omitempty"`
}

// protoError is an error that already knows its kind and code: bad
// requests, protocol errors, unknown leases.
type protoError struct {
	kind string
	code int
	msg  string
}

func (e *protoError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &protoError{kind: kindFailure, code: exitcode.Failure, msg: fmt.Sprintf(format, args...)}
}

func protocolError(format string, args ...any) error {
	return &protoError{kind: kindProtocol, code: exitcode.Failure, msg: fmt.Sprintf(format, args...)}
}

func lostError(format string, args ...any) error {
	return &protoError{kind: kindLost, code: exitcode.LeaseLost, msg: fmt.Sprintf(format, args...)}
}

// errCancelled ends a request cancelled by cancel_request.
var errCancelled = &protoError{kind: kindCancelled, code: exitcode.Failure, msg: "cancelled by cancel_request"}

// toWire is the error object for err: its code through code (the CLI's
// mapping of an error to its exit code), its kind, the CLI's message and,
// for a refusal, the resource, rule and holders.
func toWire(err error, code func(error) int) *errorMsg {
	var pe *protoError
	if errors.As(err, &pe) {
		return &errorMsg{Code: pe.code, Kind: pe.kind, Message: pe.msg}
	}
	var owed *owedError
	if errors.As(err, &owed) {
		return owed.wire(code)
	}
	e := &errorMsg{Code: code(err), Message: words.Message(err)}
	var busy *governor.BusyError
	var gone *governor.WithdrawnError
	e.Budget = refusalOf(err)
	switch {
	case e.Budget != nil:
	case errors.As(err, &busy):
		e.Resource, e.Rule = busy.Resource, busy.Rule
		e.Holders = holders(busy.Status)
		if until := busy.Status.CoolOff; until.After(busy.Status.Now) {
			s := until.Sub(busy.Status.Now).Seconds()
			e.RetryAfter = &s
		}
	case errors.As(err, &gone):
		e.Resource = gone.Resource
	}
	e.Kind = kindOf(err, e.Code)
	return e
}

// kindOf is the protocol's word for an error with exit code code.
func kindOf(err error, code int) string {
	switch {
	case code == exitcode.Skipped:
		return kindSkipped
	case code == exitcode.Superseded || errors.Is(err, governor.ErrSuperseded):
		return kindSuperseded
	case errors.Is(err, governor.ErrWithdrawn):
		return kindWithdrawn
	case code == exitcode.Busy:
		return kindBusy
	case code == exitcode.LeaseLost || errors.Is(err, governor.ErrLeaseLost) || errors.Is(err, governor.ErrNotHeld):
		return kindLost
	case errors.Is(err, governor.ErrInvalid), errors.Is(err, governor.ErrTooHeavy), errors.Is(err, governor.ErrNotOwner):
		return kindFailure
	case errors.Is(err, context.Canceled):
		return kindCancelled
	}
	return kindBackend
}
