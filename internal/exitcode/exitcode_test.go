package exitcode_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/exitcode"
)

type coded struct{ code int }

func (c coded) Error() string { return "coded" }
func (c coded) ExitCode() int { return c.code }

func TestFor(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int
	}{
		{nil, exitcode.OK},
		{errors.New("bad flag"), exitcode.Failure},
		{context.Canceled, exitcode.Failure},
		{&governor.BusyError{Resource: "r"}, exitcode.Busy},
		{fmt.Errorf("wrapped: %w", governor.ErrQueueFull), exitcode.Busy},
		{governor.ErrMaxWait, exitcode.Busy},
		{governor.ErrOwnerAlive, exitcode.Busy},
		{governor.ErrStaleToken, exitcode.Busy},
		{&governor.WithdrawnError{Resource: "r"}, exitcode.Busy},
		{governor.ErrSuperseded, exitcode.Superseded},
		{fmt.Errorf("renew: %w", governor.ErrLeaseLost), exitcode.LeaseLost},
		{coded{exitcode.Skipped}, exitcode.Skipped},
		{exitcode.With(exitcode.LeaseLost, governor.ErrNotHeld), exitcode.LeaseLost},
		// The outermost decision wins: a command that says busy is busy.
		{exitcode.With(exitcode.Busy, governor.ErrLeaseLost), exitcode.Busy},
		{exitcode.With(exitcode.Failure, nil), exitcode.Failure},
	} {
		if got := exitcode.For(tc.err); got != tc.want {
			t.Errorf("For(%v) = %d; want %d", tc.err, got, tc.want)
		}
	}
}

func TestKind(t *testing.T) {
	for code, want := range map[int]string{0: "ok", 73: "busy", 75: "skipped", 76: "superseded", 122: "lost",
		124: "timeout", 125: "failure", 126: "cannot-exec", 127: "not-found", 130: "signal", 1: "exit"} {
		if got := exitcode.Kind(code); got != want {
			t.Errorf("Kind(%d) = %q; want %q", code, got, want)
		}
	}
}
