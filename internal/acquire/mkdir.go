package acquire

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/governor-dev/governor/governor"
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

// acquireAll takes wants as AcquireAll does, in the fixed global order,
// and right after the lease of a resource bound to a mkdir slot that
// slot, before any later resource: the lease queues governor processes
// FIFO, and only its holder then contends with the wrapper for slot.d.
// On failure it releases what it took, in reverse, and returns the
// error.
func (h *Held) acquireAll(ctx context.Context, g *governor.Governor, wants []governor.Want, mode governor.Mode, ev Events) error {
	dirs := map[string]string{}
	for _, it := range h.plan.items {
		if it.MkdirLock != "" {
			dirs[it.Name] = it.MkdirLock
		}
	}
	if !slices.ContainsFunc(wants, func(w governor.Want) bool { return dirs[w.Resource] != "" }) {
		ls, err := g.AcquireAll(ctx, wants)
		h.took(ls)
		return err
	}
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
	var seg []governor.Want
	for i, w := range sorted {
		seg = append(seg, w)
		dir := dirs[w.Resource]
		if dir == "" && i < len(sorted)-1 {
			continue
		}
		ls, err := g.AcquireAll(ctx, seg)
		if err != nil {
			_ = h.Release(context.WithoutCancel(ctx))
			return err
		}
		h.took(ls)
		seg = nil
		if dir == "" {
			continue
		}
		s, err := h.plan.takeSlot(ctx, w.Resource, dir, mode, ev)
		if err != nil {
			_ = h.Release(context.WithoutCancel(ctx))
			return err
		}
		h.slots = append(h.slots, heldSlot{resource: w.Resource, slot: s, pid: h.plan.slotPID()})
	}
	return nil
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
func (p *Plan) takeSlot(ctx context.Context, resource, dir string, mode governor.Mode, ev Events) (*mkdirslot.Slot, error) {
	pid := p.slotPID()
	if mode == governor.Wait {
		var last mkdirslot.Holder
		s, err := mkdirslot.Acquire(ctx, dir, pid, p.req.Command, func(h mkdirslot.Holder) {
			last = h
			if ev.OnMkdirWait != nil {
				ev.OnMkdirWait(fmt.Sprintf("%s: waiting for its mkdir slot: %s", resource, describeSlot(resource, h)))
			}
		})
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
