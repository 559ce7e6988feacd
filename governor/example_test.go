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

// A queue policy: critical keeps one of the two slots, which batch work
// may not take even while it is free.
func ExamplePolicy() {
	dir, _ := os.MkdirTemp("", "governor-example")
	defer os.RemoveAll(dir)
	b, err := filebackend.New(dir, filebackend.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	g, _ := governor.New(b, governor.Options{Project: "example"})
	defer g.Close()
	ctx := context.Background()
	policy := governor.Policy{Classes: []governor.Class{{Name: "critical", Reserve: 1}, {Name: "batch"}}}
	opts := func(priority string) governor.AcquireOptions {
		return governor.AcquireOptions{Limit: 2, Policy: policy, Priority: priority}
	}

	batch, _ := g.Acquire(ctx, "gpu", opts("batch"))
	_, err = g.Acquire(ctx, "gpu", opts("batch"))
	fmt.Println("second batch busy:", errors.Is(err, governor.ErrBusy))
	critical, err := g.Acquire(ctx, "gpu", opts("critical"))
	fmt.Println("critical acquired:", err == nil)
	_, err = g.Acquire(ctx, "gpu", opts("urgent"))
	fmt.Println(err)
	_ = critical.Release()
	_ = batch.Release()
	// Output:
	// second batch busy: true
	// critical acquired: true
	// governor: invalid argument: priority "urgent" for gpu; allowed: critical, batch
}
