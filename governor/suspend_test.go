package governor_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/filebackend"
	"github.com/governor-dev/governor/governor/proc"
)

// remoteClocked is a file backend as a Governor sees a backend on its
// own clock (Redis): without ExpiresOnMachineClock.
type remoteClocked struct{ governor.Backend }

// Issue 24.8: a suspend longer than the TTL stops every timer of the
// holder (Go's clock stops with the machine) while a backend on its own
// clock expires the lease. The holder, resumed, must take its lease for
// lost at once, not at its next renewal. The suspend is faked: the
// sleep-inclusive clock jumps an hour ahead of Go's.
func TestLeaseLostAfterSuspendPastDeadline(t *testing.T) {
	var jump atomic.Int64
	restore := governor.SetSleepClock(func() time.Duration { return proc.SleepClock() + time.Duration(jump.Load()) })
	defer restore()
	for _, c := range []struct {
		name     string
		wrap     func(governor.Backend) governor.Backend
		wantLost bool
	}{
		{"backend on its own clock", func(b governor.Backend) governor.Backend { return remoteClocked{b} }, true},
		{"file backend, on the machine's clock", func(b governor.Backend) governor.Backend { return b }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			jump.Store(0)
			fb, err := filebackend.New(t.TempDir(), filebackend.Options{})
			if err != nil {
				t.Fatal(err)
			}
			g, err := governor.New(c.wrap(fb), governor.Options{TTL: 30 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			l, err := g.Acquire(context.Background(), "res", governor.AcquireOptions{Limit: 1})
			if err != nil {
				t.Fatal(err)
			}
			jump.Store(int64(time.Hour)) // the machine slept for an hour
			select {
			case <-l.Done():
				if !c.wantLost {
					t.Fatalf("lease lost on a backend whose clock stopped with the machine: %v", l.Err())
				}
				if !errors.Is(l.Err(), governor.ErrLeaseLost) {
					t.Fatalf("Err %v, want ErrLeaseLost", l.Err())
				}
			case <-time.After(5 * time.Second):
				// Far less than the lease's deadline (24s), far more than the
				// watch's look every 250ms.
				if c.wantLost {
					t.Fatal("the lease was still taken for held 5s after a suspend past its deadline")
				}
			}
			_ = l.Release()
		})
	}
}
