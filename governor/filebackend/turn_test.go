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
	b, err := New(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	key := governor.Key{Project: "p", Resource: "r"}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir, unlock, err := b.lockResource(ctx, key, true)
	if err != nil {
		t.Fatal(err)
	}
	const n = 6
	order := make(chan int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			d, u, err := b.lockResource(ctx, key, true)
			if err != nil {
				t.Error(err)
				order <- -1
				return
			}
			order <- i
			u()
			unix.Close(d)
		})
		// The next starts once this one waits (holder and i+1 waiters).
		for users(b, key) != i+2 {
			if ctx.Err() != nil {
				t.Fatalf("waiter %d never queued", i)
			}
			time.Sleep(time.Millisecond)
		}
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

func users(b *Backend, key governor.Key) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if t := b.turns[key]; t != nil {
		return t.users
	}
	return 0
}
