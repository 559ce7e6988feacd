package redisbackend

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/eventkind"
	"github.com/governor-dev/governor/governor/internal/backendkit"
	scripts "github.com/governor-dev/governor/scripts-lua"
)

var (
	seqScript      = newScript(func() string { return scripts.Seq })
	takeoverScript = newScript(scripts.Takeover)
)

// SeqKey is the key of a sequence of project. '{' is not allowed in
// names, so the "seq:" in the tag never clashes with a resource's.
func SeqKey(project, name string) string {
	return Prefix + "{" + project + "/seq:" + name + "}:seq"
}

// acquireTakeover implements governor.Backend's Acquire of a takeover (Request.Takeover).
func (b *Backend) acquireTakeover(ctx context.Context, key governor.Key, old string, req governor.Request) (governor.Result, error) {
	if b.closed.Load() {
		return governor.Result{}, governor.ErrClosed
	}
	decl, err := b.declJSON(req.Declaration)
	if err != nil {
		return governor.Result{}, err
	}
	rk := b.resource(key)
	b.lossMS(rk, req.TTL) // noted: the TTL of the lease it grants
	v, err := takeoverScript.Run(ctx, b.rdb, rk.keys, old, req.ID, req.TTL.Milliseconds(), decl,
		backendkit.TakeoverDetail(req), req.Weight).Slice()
	if err != nil {
		return governor.Result{}, wrap("takeover", err)
	}
	r := &reader{op: "takeover", key: key}
	if !r.length(v, 1, true) {
		return governor.Result{}, r.err
	}
	switch code := r.int(v[0], "the code"); {
	case r.err != nil:
		return governor.Result{}, r.err
	case code == 0:
		return governor.Result{}, governor.ErrNotHeld
	case code == 2: // ended, but no room for it now
		st, err := b.Status(ctx, key)
		if err != nil {
			return governor.Result{}, err
		}
		return governor.Result{Outcome: governor.Refused, Status: st}, nil
	}
	if !r.length(v, 3, false) {
		return governor.Result{}, r.err
	}
	res := governor.Result{Outcome: governor.Granted, Token: r.int(v[1], "the token"), Expires: time.UnixMilli(r.int(v[2], "the expiry"))}
	if r.err == nil {
		rk.held.Delete(old)
		rk.held.Store(req.ID, res.Token)
	}
	return res, r.err
}

// NextSeq implements governor.Backend.
func (b *Backend) NextSeq(ctx context.Context, project, name string, token int64) (int64, error) {
	if b.closed.Load() {
		return 0, governor.ErrClosed
	}
	v, err := seqScript.Run(ctx, b.rdb, []string{SeqKey(project, name)}, strconv.FormatInt(token, 10)).Slice()
	if err != nil {
		return 0, wrap("seq", err)
	}
	r := &reader{op: "seq", key: governor.Key{Project: project, Resource: "seq:" + name}}
	if !r.length(v, 2, false) {
		return 0, r.err
	}
	ok, n := r.int(v[0], "the code"), r.int(v[1], "the number")
	if r.err != nil {
		return 0, r.err
	}
	if ok != 1 {
		return 0, fmt.Errorf("%w: token %d is older than %d, already used for sequence %s", governor.ErrStaleToken, token, n, name)
	}
	return n, nil
}

// Events implements governor.Backend: the resource's capped stream.
func (b *Backend) Events(ctx context.Context, key governor.Key, since time.Time) ([]governor.Event, error) {
	if b.closed.Load() {
		return nil, governor.ErrClosed
	}
	start := "-"
	if !since.IsZero() {
		start = strconv.FormatInt(since.UnixMilli(), 10)
	}
	msgs, err := b.rdb.XRange(ctx, eventsKey(key), start, "+").Result()
	if err != nil {
		return nil, wrap("events", err)
	}
	out := make([]governor.Event, 0, len(msgs))
	for _, m := range msgs {
		// An entry that does not read (written by something else) is
		// reported in its place, not fatal for the others.
		r := &reader{op: "events", key: key}
		e := governor.Event{Kind: r.str(m.Values["kind"], "the kind of event "+m.ID),
			LeaseID: r.str(m.Values["lease"], "the lease of event "+m.ID),
			Detail:  r.str(m.Values["detail"], "the detail of event "+m.ID)}
		e.Token = r.int(m.Values["token"], "the token of event "+m.ID)
		if by, ok := m.Values["by"]; ok {
			e.By = r.str(by, "who acted in event "+m.ID)
		}
		e.At = time.UnixMilli(r.int(m.Values["at"], "the time of event "+m.ID))
		if r.err != nil {
			e = governor.Event{Kind: eventkind.Unreadable, Detail: r.err.Error(), At: streamTime(m.ID)}
		}
		out = append(out, e)
	}
	return out, nil
}

// streamTime is the time in a stream entry id ("ms-seq"), or zero.
func streamTime(id string) time.Time {
	ms, _, _ := strings.Cut(id, "-")
	n, err := strconv.ParseInt(ms, 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.UnixMilli(n)
}

// eventsKey is the resource's event stream (the last of Keys).
func eventsKey(key governor.Key) string {
	ks := Keys(key)
	return ks[len(ks)-1]
}
