package governor_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/leasetest"
)

// An admin action's by is a label beside who really acted (the OS user,
// session and pid), never in its place (issue 24.14): --by root does not
// make an event say root did it.
func TestAdminActorNotForged(t *testing.T) {
	g := leasetest.FileGovernor(t, t.TempDir(), governor.Options{Project: "p", Session: "s-real"})
	ctx := context.Background()
	if err := g.Pause(ctx, "r", "root"); err != nil {
		t.Fatal(err)
	}
	evs, err := g.Events(ctx, "r", time.Time{})
	if err != nil || len(evs) == 0 {
		t.Fatalf("events %v, %v", evs, err)
	}
	by := evs[len(evs)-1].By
	if !strings.HasPrefix(by, g.Identity()) || !strings.HasSuffix(by, ` as "root"`) || !strings.Contains(by, "session s-real") {
		t.Fatalf("pause --by root recorded by %q; want %q as \"root\"", by, g.Identity())
	}
}
