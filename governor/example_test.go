package governor_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/filebackend"
)

// Two holders of a limit-1 resource: the second is refused with the
// holder's declaration, then gets the slot once the first releases it.
func Example() {
	dir, _ := os.MkdirTemp("", "governor-example")
	defer os.RemoveAll(dir)
	b, err := filebackend.New(dir, filebackend.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	g, _ := governor.New(b, governor.Options{Project: "example", Session: "conductor-A"})
	defer g.Close()
	ctx := context.Background()

	first, _ := g.Acquire(ctx, "issue:2316", governor.AcquireOptions{Limit: 1})
	_, err = g.Acquire(ctx, "issue:2316", governor.AcquireOptions{Limit: 1})
	var busy *governor.BusyError
	if errors.As(err, &busy) {
		fmt.Println("busy, held by session", busy.Status.Holders[0].Session)
	}
	_ = first.Release()
	second, err := g.Acquire(ctx, "issue:2316", governor.AcquireOptions{Limit: 1})
	fmt.Println("acquired:", err == nil, "token increased:", second.Token() > first.Token())
	_ = second.Release()
	// Output:
	// busy, held by session conductor-A
	// acquired: true token increased: true
}
