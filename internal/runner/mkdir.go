package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/proc"
	"github.com/governor-dev/governor/internal/mkdirslot"
)

// heldSlot is a mkdir slot this run made, and the resource it is bound to.
type heldSlot struct {
	resource string
	slot     *mkdirslot.Slot
	pid      int // written to its pid file
}

// acquireAll takes wants as AcquireAll does, in the fixed global order,
// and right after the lease of a resource bound to a mkdir slot
// (Options.MkdirLocks) that slot, before any later resource: the lease
// queues governor processes FIFO, and only its holder then contends with
// the wrapper for slot.d. The slot is skipped (the lease still taken) only
// while an ancestor holds it (mkdirslot.HeldByAncestor); a
// HEAVY_LOCK_HELD that does not prove it is said, and the slot taken.
//
// A run that holds the lease and waits for the slot gives the lease up
// (errYield) when a descendant of the slot's holder queues for it: that
// is a governor run inside the wrapper, which the wrapper waits for, and
// holding on would deadlock both. It then queues again, behind it.
//
// On failure it releases what it took, in reverse, and returns the
// error; the slots it made are in r.slots.
func (r *run) acquireAll(ctx context.Context, g *governor.Governor, wants []governor.Want, mode governor.Mode) ([]*governor.Lease, error) {
	if !slices.ContainsFunc(wants, func(w governor.Want) bool { return r.o.MkdirLocks[w.Resource] != "" }) {
		return g.AcquireAll(ctx, wants)
	}
	for _, w := range wants {
		if n := r.o.MkdirLockNotes[w.Resource]; n != "" {
			fmt.Fprintf(r.stderr, "governor: %s\n", n)
		}
	}
	for {
		got, err := r.acquireInOrder(ctx, g, wants, mode)
		var y *yieldError
		if !errors.As(err, &y) {
			return got, err
		}
		fmt.Fprintf(r.stderr, "governor: %s: a run inside the slot's holder (pid %d: %s) queues for the lease this run held while waiting for the slot; "+
			"giving the lease up to it and queueing again\n", y.resource, y.holder, y.cmd)
	}
}

// yieldError is how takeSlot gives the lease up (see acquireAll).
type yieldError struct {
	resource string
	holder   int    // the slot's holder
	cmd      string // its command, escaped (mkdirslot.Holder.Cmd)
}

func (e *yieldError) Error() string {
	return fmt.Sprintf("%s: yielding to a run inside the slot's holder (pid %d)", e.resource, e.holder)
}

// acquireInOrder is one try of acquireAll.
func (r *run) acquireInOrder(ctx context.Context, g *governor.Governor, wants []governor.Want, mode governor.Mode) ([]*governor.Lease, error) {
	sorted := slices.Clone(wants)
	slices.SortStableFunc(sorted, func(a, b governor.Want) int {
		switch {
		case g.Less(a.Resource, b.Resource):
			return -1
		case g.Less(b.Resource, a.Resource):
			return 1
		}
		return 0
	})
	var got []*governor.Lease
	undo := func(err error) ([]*governor.Lease, error) {
		r.releaseSlots()
		for i := len(got) - 1; i >= 0; i-- {
			_ = got[i].Release()
		}
		return nil, err
	}
	var seg []governor.Want
	for i, w := range sorted {
		seg = append(seg, w)
		dir := r.o.MkdirLocks[w.Resource]
		if dir == "" && i < len(sorted)-1 {
			continue
		}
		ls, err := g.AcquireAll(ctx, seg)
		if err != nil {
			return undo(err)
		}
		got, seg = append(got, ls...), nil
		if dir == "" {
			continue
		}
		if ok, why := mkdirslot.HeldByAncestor(dir, getenv(r.env, mkdirslot.EnvHeld)); ok {
			continue // an ancestor holds the slot: the lease alone is this run's
		} else if why != "" {
			fmt.Fprintf(r.stderr, "governor: %s: %s; taking the slot\n", w.Resource, why)
		}
		s, err := r.takeSlot(ctx, g, w.Resource, dir, mode)
		if err != nil {
			return undo(err)
		}
		r.slots = append(r.slots, heldSlot{resource: w.Resource, slot: s, pid: r.slotPID()})
	}
	return got, nil
}

// takeSlot takes the mkdir slot in dir bound to resource: at once, or
// polling every mkdirslot.PollInterval with --if-busy wait. The pid
// written is the one declared as the holder of the leases (the watchdog's,
// which outlives the command tree), else governor's.
func (r *run) takeSlot(ctx context.Context, g *governor.Governor, resource, dir string, mode governor.Mode) (*mkdirslot.Slot, error) {
	pid := r.slotPID()
	if mode == governor.Wait {
		var last mkdirslot.Holder
		_, tty := terminal(r.stderr) // as the status line: only on a terminal (--quiet prints nothing)
		wctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		go watchForInsiders(wctx, cancel, g, resource, dir)
		s, err := mkdirslot.Acquire(wctx, dir, pid, r.rec.Command, func(h mkdirslot.Holder) {
			last = h
			if tty {
				fmt.Fprintf(r.stderr, "governor: %s: waiting for its mkdir slot: %s\n", resource, describeSlot(resource, h))
			}
		})
		var y *yieldError
		if errors.As(context.Cause(wctx), &y) && ctx.Err() == nil {
			return nil, y
		}
		if errors.Is(err, context.DeadlineExceeded) && r.o.WaitTimeout > 0 {
			return nil, &NotAcquiredError{Msg: fmt.Sprintf("%s: not acquired within --wait-timeout %v: %s", resource, r.o.WaitTimeout, describeSlot(resource, last))}
		}
		if err != nil && ctx.Err() == nil {
			return nil, fmt.Errorf("%s: %w", resource, err)
		}
		return s, err
	}
	s, h, err := mkdirslot.TryAcquire(dir, pid, r.rec.Command)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s: %w", resource, err)
	case s != nil:
		return s, nil
	}
	na := &NotAcquiredError{Msg: fmt.Sprintf("%s is busy: %s", resource, describeSlot(resource, h))}
	if r.o.IfBusy == IfBusySkip {
		na.Msg += "; skipped (--if-busy skip)"
		na.Skipped = true
	}
	return nil, na
}

// watchForInsiders cancels ctx with a yieldError when a process of this
// host descending from the holder of dir's slot queues for resource's
// lease (see acquireAll); it looks every mkdirslot.PollInterval until ctx
// is done.
func watchForInsiders(ctx context.Context, cancel context.CancelCauseFunc, g *governor.Governor, resource, dir string) {
	self := proc.HostID()
	t := time.NewTicker(mkdirslot.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		h, err := mkdirslot.Inspect(dir)
		if err != nil || h.State != mkdirslot.Held {
			continue
		}
		st, err := g.Status(ctx, resource)
		if err != nil {
			continue
		}
		for _, w := range st.Waiters {
			if w.HostID == self && w.PID > 0 && mkdirslot.Descends(w.PID, h.PID) {
				cancel(&yieldError{resource: resource, holder: h.PID, cmd: h.Cmd})
				return
			}
		}
	}
}

// slotPID is the pid a mkdir slot of this run names: the one declared as
// the holder of the leases (the watchdog's, which outlives the command
// tree), else governor's.
func (r *run) slotPID() int {
	if r.wd != nil {
		return r.wd.pid()
	}
	return os.Getpid()
}

// describeSlot says who holds the mkdir slot of resource, with the command
// that clears a stuck one.
func describeSlot(resource string, h mkdirslot.Holder) string {
	s := h.Describe()
	if h.Stuck(time.Now()) {
		s += fmt.Sprintf("; stuck for longer than %v: if no wrapper is running, clear it with 'governor takeover %s --force'", mkdirslot.StuckAfter, shellQuote(resource))
	}
	return s
}

// releaseSlots removes the mkdir slots this run made, in reverse order.
func (r *run) releaseSlots() {
	for i := len(r.slots) - 1; i >= 0; i-- {
		r.releaseSlot(r.slots[i].resource)
	}
}

// releaseSlot removes the mkdir slot bound to resource if this run made
// it and it is still its own; before the resource's lease is released.
func (r *run) releaseSlot(resource string) {
	i := slices.IndexFunc(r.slots, func(s heldSlot) bool { return s.resource == resource })
	if i < 0 {
		return
	}
	s := r.slots[i]
	r.slots = slices.Delete(r.slots, i, i+1)
	if err := s.slot.Release(); err != nil {
		fmt.Fprintf(r.stderr, "governor: %s: %v; left alone\n", resource, err)
	}
}

// slotEnv adds HEAVY_LOCK_HELD to the command's environment when this run
// made a mkdir slot, so that a nested wrapper or governor run does not
// take it again. Its value is the pid the slot's pid file names.
func (r *run) slotEnv(env []string) []string {
	if len(r.slots) == 0 {
		return env
	}
	return append(env, mkdirslot.EnvHeld+"="+strconv.Itoa(r.slots[0].pid))
}
