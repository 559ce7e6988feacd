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

// A lease that outlives the process that took it, as a shell script's:
// its handle, with the secret, renews and releases it; the public lease
// id alone, as Status shows it to everyone, does not.
func ExampleGovernor_ReleaseHandle() {
	dir, _ := os.MkdirTemp("", "governor-example")
	defer os.RemoveAll(dir)
	b, err := filebackend.New(dir, filebackend.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	g, _ := governor.New(b, governor.Options{Project: "example", PID: governor.NoPID})
	defer g.Close()
	ctx := context.Background()

	l, _ := g.Acquire(ctx, "deploy", governor.AcquireOptions{Limit: 1, NoHeartbeat: true})
	l.Detach()
	handle := l.Handle().String() // RESOURCE@LEASE_ID.SECRET: keep it to yourself

	st, _ := g.Status(ctx, "deploy")
	public := governor.Handle{Resource: "deploy", ID: st.Holders[0].LeaseID}
	_, err = g.RenewHandle(ctx, public, 0)
	fmt.Println("renew by the public id:", errors.Is(err, governor.ErrNotOwner))

	h, _ := governor.ParseHandle(handle)
	_, err = g.RenewHandle(ctx, h, 0)
	fmt.Println("renew by the handle:", err)
	fmt.Println("release by the handle:", g.ReleaseHandle(ctx, h, false))
	// Output:
	// renew by the public id: true
	// renew by the handle: <nil>
	// release by the handle: <nil>
}
