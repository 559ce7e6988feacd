package governor_test

import (
	"context"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/filebackend"
)

// TestAfterDone: a function registered with AfterDone runs once the
// lease is done (released here), or at once when it is done already; a
// stopped one is unregistered.
func TestAfterDone(t *testing.T) {
	b, err := filebackend.New(t.TempDir(), filebackend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g, err := governor.New(b, governor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ctx := context.Background()
	l, err := g.Acquire(ctx, "r", governor.AcquireOptions{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan string, 3)
	l.AfterDone(func() { ran <- "kept" })
	stop := l.AfterDone(func() { ran <- "stopped" })
	if !stop() {
		t.Fatal("stop of a registered function: false")
	}
	if stop() {
		t.Fatal("second stop: true")
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	l.AfterDone(func() { ran <- "late" })
	got := map[string]bool{}
	deadline := time.After(time.Minute)
	for len(got) < 2 {
		select {
		case s := <-ran:
			got[s] = true
		case <-deadline:
			t.Fatalf("ran %v; want kept and late", got)
		}
	}
	if got["stopped"] {
		t.Fatalf("ran %v: the stopped one ran", got)
	}
}
