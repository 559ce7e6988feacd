package acquire

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/filebackend"
)

// statusCounter counts the Status reads of the backend it wraps.
type statusCounter struct {
	governor.Backend
	reads atomic.Int32
}

func (c *statusCounter) Status(ctx context.Context, key governor.Key) (governor.Status, error) {
	c.reads.Add(1)
	return c.Backend.Status(ctx, key)
}

// The limit note comes from the grant: an acquire whose --limit is the
// limit in force reads no status; one under a live limit says the live
// limit and who set it; a waiter hears its note before its wait ends.
func TestLimitNoteFromTheGrant(t *testing.T) {
	ctx := context.Background()
	fb, err := filebackend.New(t.TempDir(), filebackend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := &statusCounter{Backend: fb}
	g, err := governor.New(b, governor.Options{Project: "p"})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	cat := catalog(nil)
	acquire := func(limit int, ev Events, ifBusy string) (*Held, error) {
		t.Helper()
		p, err := NewPlan(cat, Request{Resources: []string{"r"}, Exact: true, Limit: limit, IfBusy: ifBusy, WaitTimeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		return p.Acquire(ctx, g, ev)
	}

	h, err := acquire(2, Events{}, "")
	if err != nil {
		t.Fatal(err)
	}
	if n := b.reads.Load(); n != 0 || len(h.LimitNotes()) != 0 {
		t.Fatalf("--limit 2 in force: %d status reads, notes %+v; want none", n, h.LimitNotes())
	}
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}

	if err := g.SetLimit(ctx, "r", 1, "ops"); err != nil {
		t.Fatal(err)
	}
	first, err := acquire(2, Events{}, "")
	if err != nil {
		t.Fatal(err)
	}
	notes := first.LimitNotes()
	if len(notes) != 1 || notes[0].InForce != 1 || !strings.Contains(notes[0].Message, "a live limit set by") {
		t.Fatalf("--limit 2 under a live 1: notes %+v; want one naming the live limit 1", notes)
	}

	// The holder goes only once the waiter has heard its note.
	var heard []string
	second, err := acquire(2, Events{OnNote: func(msg string) {
		heard = append(heard, msg)
		if err := first.Release(ctx); err != nil {
			t.Error(err)
		}
	}}, IfBusyWait)
	if err != nil {
		t.Fatalf("waiting: %v (heard %q)", err, heard)
	}
	defer second.Release(ctx)
	if len(heard) != 1 || !strings.Contains(heard[0], "--limit 2 is not applied: the limit in force is 1") {
		t.Fatalf("the waiter heard %q; want the note once", heard)
	}
}

// inForce: the backends' rule of the limit in force, and where it comes
// from.
func TestInForce(t *testing.T) {
	busy := []governor.Holder{{LeaseID: "a"}}
	for _, tc := range []struct {
		name  string
		st    governor.Status
		asked int
		want  int
		src   string // a word of the source, "asked" for the asked one
	}{
		{"never used", governor.Status{}, 3, 3, "asked"},
		{"idle: the asked one is stored next", governor.Status{Limit: 2}, 3, 3, "asked"},
		{"in use: the stored one", governor.Status{Limit: 2, Used: 1, Holders: busy}, 3, 2, "another process"},
		{"waiters count as use", governor.Status{Limit: 2, Queued: 1}, 3, 2, "another process"},
		{"live wins", governor.Status{Limit: 5, LiveLimit: &governor.LiveLimit{By: "ops"}, Adaptive: &governor.AdaptiveState{Limit: 1, Max: 3}}, 3, 5, "live limit"},
		{"adaptive for its maximum", governor.Status{Limit: 4, Adaptive: &governor.AdaptiveState{Limit: 2, Max: 4}}, 4, 2, "adaptive"},
		{"adaptive under another maximum", governor.Status{Limit: 4, Adaptive: &governor.AdaptiveState{Limit: 2, Max: 8}}, 4, 4, "asked"},
	} {
		got, src := inForce(tc.st, "r", tc.asked, "asked")
		if got != tc.want || !strings.Contains(src, tc.src) {
			t.Errorf("%s: inForce = %d, %q; want %d, from %s", tc.name, got, src, tc.want, tc.src)
		}
	}
}
