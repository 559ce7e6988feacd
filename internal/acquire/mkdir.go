package acquire

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/proc"
	"github.com/governor-dev/governor/internal/mkdirslot"
	"github.com/governor-dev/governor/internal/words"
)

// heldSlot is a mkdir slot made by an Acquire, and the resource it is
// bound to.
type heldSlot struct {
	resource string
	slot     *mkdirslot.Slot
	pid      int // written to its pid file
}

// takeSlots takes wants (given in the lock order, by governor.Hold, for
// which it is the Ask's Slots) into h.taking, as governor.Hold would,
// and right after the lease of a resource bound to a mkdir slot that
// slot, before any later resource: the lease queues governor processes
// FIFO, and only its holder then contends with the wrapper for slot.d.
// The slot is skipped (the lease still taken) only while an ancestor
// holds it (mkdirslot.HeldByAncestor); a HEAVY_LOCK_HELD that does not
// prove it is said, and the slot taken.
//
// A call that holds the lease and waits for the slot gives the lease up
// (errYield) when a descendant of the slot's holder queues for it: that
// is a governor run inside the wrapper, which the wrapper waits for, and
// holding on would deadlock both. It then queues again, behind it.
//
// On failure it releases what it took, in reverse, and returns the
// error.
func (h *Held) takeSlots(ctx context.Context, g *governor.Governor, wants []governor.Want, mode governor.Mode, ev Events) error {
	dirs := map[string]string{}
	for _, it := range h.plan.items {
		if it.MkdirLock != "" {
			dirs[it.Name] = it.MkdirLock
		}
	}
	if !slices.ContainsFunc(wants, func(w governor.Want) bool { return dirs[w.Resource] != "" }) {
		gh, err := g.Hold(ctx, governor.Ask{Wants: wants})
		if err == nil {
			h.taking = gh.Leases
		}
		return err
	}
	for _, it := range h.plan.items {
		if it.MkdirNote != "" && slices.ContainsFunc(wants, func(w governor.Want) bool { return w.Resource == it.Name }) {
			ev.note(it.MkdirNote)
		}
	}
	for {
		err := h.acquireInOrder(ctx, g, wants, mode, ev, dirs)
		var y *yieldError
		if !errors.As(err, &y) {
			return err
		}
		ev.note(fmt.Sprintf("%s: a run inside the slot's holder (pid %d: %s) queues for the lease this run held while waiting for the slot; "+
			"giving the lease up to it and queueing again", y.resource, y.holder, y.cmd))
	}
}

// yieldError is how takeSlot gives the lease up (see takeSlots).
type yieldError struct {
	resource string
	holder   int    // the slot's holder
	cmd      string // its command, escaped (mkdirslot.Holder.Cmd)
}

func (e *yieldError) Error() string {
	return fmt.Sprintf("%s: yielding to a run inside the slot's holder (pid %d)", e.resource, e.holder)
}

// acquireInOrder is one try of takeSlots.
func (h *Held) acquireInOrder(ctx context.Context, g *governor.Governor, wants []governor.Want, mode governor.Mode, ev Events, dirs map[string]string) error {
	var seg []governor.Want
	for i, w := range wants {
		seg = append(seg, w)
		dir := dirs[w.Resource]
		if dir == "" && i < len(wants)-1 {
			continue
		}
		gh, err := g.Hold(ctx, governor.Ask{Wants: seg})
		if err != nil {
			h.releaseTaking()
			return err
		}
		h.taking = append(h.taking, gh.Leases...)
		seg = nil
		if dir == "" {
			continue
		}
		if ok, why := mkdirslot.HeldByAncestor(dir, Getenv(h.plan.req.Env, mkdirslot.EnvHeld)); ok {
			continue // an ancestor holds the slot: the lease alone is this call's
		} else if why != "" {
			ev.note(fmt.Sprintf("%s: %s; taking the slot", w.Resource, why))
		}
		s, err := h.plan.takeSlot(ctx, g, w.Resource, dir, mode, ev)
		if err != nil {
			h.releaseTaking()
			return err
		}
		h.slots = append(h.slots, heldSlot{resource: w.Resource, slot: s, pid: h.plan.slotPID()})
	}
	return nil
}

// releaseTaking releases what takeSlots took so far, in reverse, each
// mkdir slot just before its lease.
func (h *Held) releaseTaking() {
	for i := len(h.taking) - 1; i >= 0; i-- {
		_ = h.releaseSlot(h.taking[i].Resource())
		_ = h.taking[i].Release()
	}
	h.taking = nil
}

// watchForInsiders cancels ctx with a yieldError when a process of this
// host descending from the holder of dir's slot queues for resource's
// lease (see takeSlots); it looks every mkdirslot.PollInterval until ctx
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

// slotPID is the pid a mkdir slot names: Request.HolderPID, else
// governor's own.
func (p *Plan) slotPID() int {
	if p.req.HolderPID > 0 {
		return p.req.HolderPID
	}
	return os.Getpid()
}

// takeSlot takes the mkdir slot in dir bound to resource: at once, or
// polling every mkdirslot.PollInterval in Wait mode.
func (p *Plan) takeSlot(ctx context.Context, g *governor.Governor, resource, dir string, mode governor.Mode, ev Events) (*mkdirslot.Slot, error) {
	pid := p.slotPID()
	if mode == governor.Wait {
		var last mkdirslot.Holder
		wctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		go watchForInsiders(wctx, cancel, g, resource, dir)
		s, err := mkdirslot.Acquire(wctx, dir, pid, p.req.Command, func(h mkdirslot.Holder) {
			last = h
			if ev.OnMkdirWait != nil {
				ev.OnMkdirWait(fmt.Sprintf("%s: waiting for its mkdir slot: %s", resource, describeSlot(resource, h)))
			}
		})
		var y *yieldError
		if errors.As(context.Cause(wctx), &y) && ctx.Err() == nil {
			return nil, y
		}
		if errors.Is(err, context.DeadlineExceeded) && p.req.WaitTimeout > 0 {
			return nil, &NotAcquiredError{Msg: fmt.Sprintf("%s: not acquired within --wait-timeout %v: %s", resource, p.req.WaitTimeout, describeSlot(resource, last))}
		}
		if err != nil && ctx.Err() == nil {
			return nil, fmt.Errorf("%s: %w", resource, err)
		}
		return s, err
	}
	s, h, err := mkdirslot.TryAcquire(dir, pid, p.req.Command)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s: %w", resource, err)
	case s != nil:
		return s, nil
	}
	na := &NotAcquiredError{Msg: fmt.Sprintf("%s is busy: %s", resource, describeSlot(resource, h))}
	if p.ifBusy == IfBusySkip {
		na.Msg += "; skipped (--if-busy skip)"
		na.Skipped = true
	}
	return nil, na
}

// describeSlot says who holds the mkdir slot of resource, with the
// command that clears a stuck one.
func describeSlot(resource string, h mkdirslot.Holder) string {
	s := h.Describe()
	if h.Stuck(time.Now()) {
		s += fmt.Sprintf("; stuck for longer than %v: if no wrapper is running, clear it with 'governor takeover %s --force'", mkdirslot.StuckAfter, words.ShellQuote(resource))
	}
	return s
}

// releaseSlot removes the mkdir slot bound to resource if this call made
// it and it is still its own.
func (h *Held) releaseSlot(resource string) error {
	i := slices.IndexFunc(h.slots, func(s heldSlot) bool { return s.resource == resource })
	if i < 0 {
		return nil
	}
	s := h.slots[i]
	h.slots = slices.Delete(h.slots, i, i+1)
	if err := s.slot.Release(); err != nil {
		return fmt.Errorf("%s: %v; left alone", resource, err)
	}
	return nil
}
