package redisbackend

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/governor-dev/governor/governor"
	scripts "github.com/governor-dev/governor/scripts-lua"
)

var (
	seqScript      = redis.NewScript(scripts.Seq)
	takeoverScript = redis.NewScript(scripts.Takeover)
)

// SeqKey is the key of a sequence of project. '{' is not allowed in
// names, so the "seq:" in the tag never clashes with a resource's.
func SeqKey(project, name string) string {
	return Prefix + "{" + project + "/seq:" + name + "}:seq"
}

// Takeover implements governor.Backend.
func (b *Backend) Takeover(ctx context.Context, key governor.Key, old string, req governor.Request) (governor.Result, error) {
	decl, err := b.declJSON(req.Declaration)
	if err != nil {
		return governor.Result{}, err
	}
	d := req.Declaration
	detail := fmt.Sprintf("taken over by session %s (pid %d on %s): lease %s", d.Session, d.PID, d.Host, req.ID)
	v, err := takeoverScript.Run(ctx, b.rdb, b.resource(key).keys, old, req.ID, req.TTL.Milliseconds(), decl, detail).Slice()
	if err != nil {
		return governor.Result{}, wrap("takeover", err)
	}
	if len(v) != 3 || toInt(v[0]) != 1 {
		return governor.Result{}, governor.ErrNotHeld
	}
	return governor.Result{Outcome: governor.Granted, Token: atoi(toString(v[1])), Expires: time.UnixMilli(atoi(toString(v[2])))}, nil
}

// NextSeq implements governor.Backend.
func (b *Backend) NextSeq(ctx context.Context, project, name string, token int64) (int64, error) {
	v, err := seqScript.Run(ctx, b.rdb, []string{SeqKey(project, name)}, strconv.FormatInt(token, 10)).Slice()
	if err != nil {
		return 0, wrap("seq", err)
	}
	if len(v) != 2 {
		return 0, fmt.Errorf("governor: redis: short seq reply")
	}
	if toInt(v[0]) != 1 {
		return 0, fmt.Errorf("%w: token %d is older than %s, already used for sequence %s", governor.ErrStaleToken, token, toString(v[1]), name)
	}
	return toInt(v[1]), nil
}

// Events implements governor.Backend: the resource's capped stream.
func (b *Backend) Events(ctx context.Context, key governor.Key, since time.Time) ([]governor.Event, error) {
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
		e := governor.Event{Kind: str(m.Values["kind"]), LeaseID: str(m.Values["lease"]), Detail: str(m.Values["detail"])}
		e.Token = atoi(str(m.Values["token"]))
		e.At = time.UnixMilli(atoi(str(m.Values["at"])))
		out = append(out, e)
	}
	return out, nil
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// eventsKey is the resource's event stream (the last of Keys).
func eventsKey(key governor.Key) string {
	ks := Keys(key)
	return ks[len(ks)-1]
}
