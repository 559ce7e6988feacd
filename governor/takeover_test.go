package governor_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/filebackend"
)

// failingTakeover fails every takeover on one resource.
type failingTakeover struct {
	governor.Backend
	resource string
}

var errInjected = errors.New("injected failure")

func (b failingTakeover) Acquire(ctx context.Context, req governor.Request) (governor.Result, error) {
	if req.Takeover != "" && req.Key.Resource == b.resource {
		return governor.Result{}, errInjected
	}
	return b.Backend.Acquire(ctx, req)
}

// TestTakeoverSessionStopsMidway: a session takeover that fails on one
// resource stops there, keeps (and returns) the leases already taken,
// and names what was taken, where it stopped and what was not tried.
func TestTakeoverSessionStopsMidway(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	open := func(session string, b governor.Backend) *governor.Governor {
		if b == nil {
			fb, err := filebackend.New(dir, filebackend.Options{})
			if err != nil {
				t.Fatal(err)
			}
			b = fb
		}
		g, err := governor.New(b, governor.Options{Project: "p", Session: session, LockOrder: []string{"a", "b", "c"}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { g.Close() })
		return g
	}
	old := open("relay-1", nil)
	for _, r := range []string{"c", "b", "a"} {
		l, err := old.Acquire(ctx, r, governor.AcquireOptions{Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		l.Detach()
	}
	fb, err := filebackend.New(dir, filebackend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g := open("relay-2", failingTakeover{fb, "b"})
	ls, err := g.TakeoverSession(ctx, "relay-1", governor.TakeoverOptions{Force: true})
	var partial *governor.PartialTakeoverError
	if !errors.As(err, &partial) || !errors.Is(err, errInjected) {
		t.Fatalf("TakeoverSession = %v, %v; want a *PartialTakeoverError wrapping the failure", ls, err)
	}
	if got := fmt.Sprintln(partial.Taken, partial.Failed, partial.Left); got != "[a] b [c]\n" {
		t.Fatalf("taken, failed, left = %s; want [a] b [c]", got)
	}
	if len(ls) != 1 || ls[0].Resource() != "a" {
		t.Fatalf("leases returned = %v; want the one of a", ls)
	}
	for r, want := range map[string]string{"a": "relay-2", "b": "relay-1", "c": "relay-1"} {
		st, err := g.Status(ctx, r)
		if err != nil || len(st.Holders) != 1 || st.Holders[0].Session != want {
			t.Fatalf("%s after the partial takeover: %+v, %v; want held by %s", r, st.Holders, err, want)
		}
	}
}
