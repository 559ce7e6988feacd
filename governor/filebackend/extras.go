package filebackend

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/eventkind"
	"github.com/governor-dev/governor/governor/internal/backendkit"
)

// seqPrefix names the pseudo-resource that holds a sequence. '{' is not
// allowed in resource names, so it never clashes with one.
const seqPrefix = "{seq}"

// event records something that happened to a lease, keeping at most
// backendkit.MaxEvents.
func (t *tx) event(kind, id string, token int64, detail string) {
	st := t.st
	st.Events = append(st.Events, event{At: t.now.wall.UnixNano(), Kind: kind, Lease: id, Token: token, Detail: detail})
	if n := len(st.Events) - backendkit.MaxEvents; n > 0 {
		st.Events = append(st.Events[:0], st.Events[n:]...)
	}
	t.dirty = true
}

// lost is the error of a renewal of lease id, which st no longer holds:
// a *governor.LeaseLostError naming the last event that ended it, or
// governor.ErrLeaseLost when none is recorded.
func (st *state) lost(key governor.Key, id string) error {
	if e := st.ended(id); e != nil {
		return &governor.LeaseLostError{Resource: key.Resource, LeaseID: id, End: e.public()}
	}
	return governor.ErrLeaseLost
}

// ended is the last recorded event that ended lease id (a takeover, a
// reclaim, its expiry), or nil.
func (st *state) ended(id string) *event {
	for i := len(st.Events) - 1; i >= 0; i-- {
		e := &st.Events[i]
		if e.Lease == id && slices.Contains(backendkit.EndedKinds, e.Kind) {
			return e
		}
	}
	return nil
}

func (e event) public() governor.Event {
	return governor.Event{At: time.Unix(0, e.At), Kind: e.Kind, LeaseID: e.Lease, Token: e.Token, Detail: e.Detail, By: e.By}
}

// acquireTakeover implements governor.Backend's Acquire of a takeover (Request.Takeover).
func (b *Backend) acquireTakeover(ctx context.Context, key governor.Key, old string, req governor.Request) (governor.Result, error) {
	s := section{settle: true, absent: func() error { return governor.ErrNotHeld }}
	return within(ctx, b, key, s, func(t *tx) (governor.Result, error) { return b.takeover(t, key, old, req) })
}

func (b *Backend) takeover(t *tx, key governor.Key, old string, req governor.Request) (governor.Result, error) {
	var was holder
	if i := holderIndex(t.st, old); i >= 0 {
		was = t.st.Holders[i]
		t.hold(i)
		t.dropHolder(i)
	} else {
		// Ended by its expiry or a reclaim: its slot is taken if it is
		// free, and the takeover recorded all the same.
		ev := t.st.ended(old)
		if ev == nil || (ev.Kind != eventkind.Expired && ev.Kind != eventkind.Reclaimed) {
			return governor.Result{}, t.commitThen(governor.ErrNotHeld)
		}
		if !t.fits(req.Weight) {
			return committed(t, governor.Result{Outcome: governor.Refused, Status: t.st.status(key, t.now, b.boot, backendkit.RefusalHolders)})
		}
		// Under a queue policy it counts in no class (as in Redis: the
		// ended lease's class is gone with it).
		was = holder{Weight: req.Weight, Token: ev.Token, Class: -1}
	}
	t.st.Counters.Takeovers++
	h := t.grant(req.ID, was.Weight, req.TTL, req.Declaration)
	h.Class, h.Key = was.Class, was.Key // under a queue policy, the old lease's class and key
	t.event(eventkind.Takeover, old, was.Token, fmt.Sprintf("%s, token %d", backendkit.TakeoverDetail(req), h.Token))
	tok, exp := h.Token, h.Expires
	t.attach(h)
	if err := t.commit(); err != nil {
		b.forget(key, req.ID)
		return governor.Result{}, err
	}
	return governor.Result{Outcome: governor.Granted, Token: tok, Expires: t.now.at(exp)}, nil
}

// NextSeq implements governor.Backend.
func (b *Backend) NextSeq(ctx context.Context, project, name string, token int64) (int64, error) {
	key := governor.Key{Project: project, Resource: seqPrefix + name}
	return within(ctx, b, key, section{create: true}, func(t *tx) (int64, error) {
		st := t.st
		if token < st.SeqToken {
			return 0, fmt.Errorf("%w: token %d is older than %d, already used for sequence %s", governor.ErrStaleToken, token, st.SeqToken, name)
		}
		st.SeqToken = token
		st.Seq++
		t.dirty = true
		return committed(t, st.Seq)
	})
}

// Events implements governor.Backend.
func (b *Backend) Events(ctx context.Context, key governor.Key, since time.Time) ([]governor.Event, error) {
	st, err := b.read(ctx, key)
	if err != nil || st == nil {
		return nil, err
	}
	var out []governor.Event
	for _, e := range st.Events {
		if time.Unix(0, e.At).Before(since) {
			continue
		}
		out = append(out, e.public())
	}
	return out, nil
}

// isSeq tells a sequence's or rate limit's pseudo-resource from a
// resource.
func isSeq(name string) bool {
	return strings.HasPrefix(name, seqPrefix) || strings.HasPrefix(name, ratePrefix) || name == budgetResource
}
