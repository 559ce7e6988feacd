package filebackend

import (
	"context"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/governor-dev/governor/governor"
)

// The calls of one process on a resource take the lock in the order
// they came (Backend.lock's turns), and the process's queue goes when it
// is empty. flock(2) alone serves its waiters in no order: with 16
// goroutines in each of 4 processes on one resource, a release went 5 s
// without the lock on a loaded machine.
func TestLockTurnsInOrder(t *testing.T) {
	ctx, b, key, dir, unlock := lockedResource(t)
	const n = 6
	order := make(chan int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			d, u, err := b.lockResource(ctx, key, true, false)
			if err != nil {
				t.Error(err)
				order <- -1
				return
			}
			order <- i
			u()
			unix.Close(d)
		})
		queued(ctx, t, b, key, i) // the next starts once this one waits
	}
	unlock()
	unix.Close(dir)
	for want := range n {
		if got := <-order; got != want {
			t.Fatalf("grant %d went to waiter %d; want them in order", want, got)
		}
	}
	wg.Wait() // each has ended its turn
	if u := users(b, key); u != 0 {
		t.Fatalf("the queue of r has %d users after every call ended; want it gone", u)
	}
}

// lockedResource is a Backend with resource p/r's lock held, and a
// context for the test's waits.
func lockedResource(t *testing.T) (context.Context, *Backend, governor.Key, int, func()) {
	t.Helper()
	b, err := New(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	key := governor.Key{Project: "p", Resource: "r"}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	dir, unlock, err := b.lockResource(ctx, key, true, false)
	if err != nil {
		t.Fatal(err)
	}
	return ctx, b, key, dir, unlock
}

// queued waits for waiter i to be in key's queue (its holder and i+1
// waiters).
func queued(ctx context.Context, t *testing.T, b *Backend, key governor.Key, i int) {
	t.Helper()
	for users(b, key) != i+2 {
		if ctx.Err() != nil {
			t.Fatalf("waiter %d never queued", i)
		}
		time.Sleep(time.Millisecond)
	}
}

func users(b *Backend, key governor.Key) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if t := b.turns[key]; t != nil {
		return t.users
	}
	return 0
}

// A call that ends or keeps a holding (a release, a renewal: ahead) goes
// before the acquires of its process waiting for the lock, in the order
// such calls came; a waiter whose context ends leaves the queue, and the
// turn passes over it. Queued behind its own process's acquires, a
// release waited for each of them to take the lock across processes.
func TestLockTurnsAhead(t *testing.T) {
	ctx, b, key, dir, unlock := lockedResource(t)
	// Queued in this order: acquires 0, 1 (whose context ends while it
	// waits), 2, then releases 3 and 4.
	ahead := []bool{false, false, false, true, true}
	gone, leave := context.WithCancel(ctx)
	order := make(chan int, len(ahead))
	var wg sync.WaitGroup
	for i, a := range ahead {
		wctx := ctx
		if i == 1 {
			wctx = gone
		}
		wg.Go(func() {
			d, u, err := b.lockResource(wctx, key, true, a)
			if err != nil {
				if i != 1 {
					t.Error(err)
				}
				order <- -i
				return
			}
			order <- i
			u()
			unix.Close(d)
		})
		queued(ctx, t, b, key, i)
	}
	leave()
	if got := <-order; got != -1 {
		t.Fatalf("first to end: waiter %d; want 1, whose context ended, out of the queue", got)
	}
	unlock()
	unix.Close(dir)
	for _, want := range []int{3, 4, 0, 2} {
		if got := <-order; got != want {
			t.Fatalf("the lock went to waiter %d; want %d (releases 3 and 4 first, then acquires 0 and 2)", got, want)
		}
	}
	wg.Wait()
	if u := users(b, key); u != 0 {
		t.Fatalf("the queue of r has %d users after every call ended; want it gone", u)
	}
}
