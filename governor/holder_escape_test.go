package governor_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/eventkind"
	"github.com/governor-dev/governor/governor/safetext/safetexttest"
	"github.com/governor-dev/governor/internal/leasetest"
)

// What a holder declared is another process's text: the busy and takeover
// messages that quote it must not let it drive the reader's terminal.
func TestHostileDeclarationEscaped(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	h := governor.Holder{LeaseID: "lease" + safetexttest.Hostile, Token: 7, AcquiredAt: now.Add(-time.Minute),
		Declaration: governor.Declaration{Session: safetexttest.Hostile, Host: safetexttest.Hostile, PID: 42, Command: safetexttest.Hostile}}
	safetexttest.Check(t, "Describe", h.Describe(now))
	busy := &governor.BusyError{Resource: "heavy", Status: governor.Status{Limit: 1, Used: 1, Now: now, Holders: []governor.Holder{h}}}
	safetexttest.Check(t, "BusyError", busy.Error())
	for _, kind := range []string{eventkind.Takeover, eventkind.Reclaimed, "other" + safetexttest.Hostile} {
		lost := &governor.LeaseLostError{Resource: "heavy", LeaseID: "x", End: governor.Event{Kind: kind, Detail: "taken over by session " + safetexttest.Hostile}}
		safetexttest.Check(t, "LeaseLostError "+kind, lost.Error())
	}

	// Stored by one Governor, refused to another.
	ctx := context.Background()
	dir := t.TempDir()
	open := func(session string) *governor.Governor {
		g := leasetest.FileGovernor(t, dir, governor.Options{Project: "p", Session: session, Command: safetexttest.Hostile})
		t.Cleanup(func() { g.Close() })
		return g
	}
	holder, other := open(safetexttest.Hostile), open("reader")
	l, err := holder.Acquire(ctx, "heavy", governor.AcquireOptions{Limit: 1, Mode: governor.Fail})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	_, err = other.Acquire(ctx, "heavy", governor.AcquireOptions{Limit: 1, Mode: governor.Fail})
	if !errors.Is(err, governor.ErrBusy) {
		t.Fatalf("second acquire: %v, want busy", err)
	}
	safetexttest.Check(t, "busy error", err.Error())
	_, err = other.Takeover(ctx, "heavy", 1, governor.TakeoverOptions{LeaseID: l.ID()})
	if !errors.Is(err, governor.ErrOwnerAlive) {
		t.Fatalf("takeover of a live holder: %v, want ErrOwnerAlive", err)
	}
	safetexttest.Check(t, "takeover refusal", err.Error())
	_, err = other.Takeover(ctx, "heavy", 1, governor.TakeoverOptions{Session: "x" + safetexttest.Hostile})
	safetexttest.Check(t, "takeover of an unknown session", err.Error())
}
