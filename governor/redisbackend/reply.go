package redisbackend

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/internal/backendkit"
)

// reader reads a script's reply strictly. A value not of the form the
// scripts give (a corrupt key, a script of another version) is a
// malformed reply: governor.ErrBackend, final, naming the operation, the
// resource and what was malformed. The first fault sticks in err; the
// values read after it are zero.
type reader struct {
	op  string
	key governor.Key
	err error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: redis: %s %s: malformed reply: %s", governor.ErrBackend, r.op, r.key,
			fmt.Sprintf(format, args...))
	}
}

// show quotes a value for an error, clipped.
func show(v any) string {
	s, ok := v.(string)
	if !ok {
		return fmt.Sprintf("%v (%T)", v, v)
	}
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return strconv.Quote(s)
}

func (r *reader) int(v any, what string) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case string:
		if n, err := strconv.ParseInt(x, 10, 64); err == nil {
			return n
		}
	}
	r.fail("%s is %s; want an integer", what, show(v))
	return 0
}

func (r *reader) str(v any, what string) string {
	switch x := v.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	}
	r.fail("%s is %s; want a string", what, show(v))
	return ""
}

func (r *reader) list(v any, what string) []any {
	l, ok := v.([]any)
	if !ok {
		r.fail("%s is %s; want a list", what, show(v))
	}
	return l
}

// length checks that reply v has n fields (at least n when atLeast).
func (r *reader) length(v []any, n int, atLeast bool) bool {
	if len(v) == n || atLeast && len(v) > n {
		return true
	}
	r.fail("%d fields; want %d", len(v), n)
	return false
}

// record splits the record of a lease or waiter into its five fields,
// of the form given (see head.lua), and reads the last, the declaration,
// into decl. It returns nil when the record does not have that form.
func (r *reader) record(kind, id string, v any, form string, decl *governor.Declaration) []string {
	rec := r.str(v, "the record of "+kind+" "+id)
	f := strings.SplitN(rec, " ", 5)
	if r.err != nil || len(f) != 5 {
		r.fail("the record of %s %s is %s; want %q", kind, id, show(rec), form)
		return nil
	}
	if err := json.Unmarshal([]byte(f[4]), decl); err != nil {
		r.fail("the declaration of %s %s is %s: %v", kind, id, show(f[4]), err)
	}
	return f
}

// holders reads (id, record, expiry) triples; a record is "weight ttl_ms
// token acquired_ms declaration" (REC in head.lua), and the last heartbeat
// is the expiry minus the ttl.
func (r *reader) holders(v []any) []governor.Holder {
	if len(v)%3 != 0 {
		r.fail("holders: %d fields, not (id, record, expiry) triples", len(v))
		return nil
	}
	var hs []governor.Holder
	for i := 0; i+2 < len(v) && r.err == nil; i += 3 {
		id := r.str(v[i], "a holder's lease id")
		h := governor.Holder{LeaseID: id, Expires: time.UnixMilli(r.int(v[i+2], "the expiry of lease "+id))}
		f := r.record("lease", id, v[i+1], "weight ttl_ms token acquired_ms declaration", &h.Declaration)
		if f == nil {
			break
		}
		what := "in the record of lease " + id + ", the "
		h.Weight = int(r.int(f[0], what+"weight"))
		h.Heartbeat = h.Expires.Add(-time.Duration(r.int(f[1], what+"ttl")) * time.Millisecond)
		h.Token = r.int(f[2], what+"token")
		h.AcquiredAt = time.UnixMilli(r.int(f[3], what+"acquisition time"))
		var mark struct {
			PM  int64 `json:"pm"`
			CIP int64 `json:"cip"` // cancelled in progress (lib-supersede.lua's cancel_holder)
		}
		ok := json.Unmarshal([]byte(f[4]), &mark) == nil
		if ok && mark.PM > 0 {
			h.Progress = time.UnixMilli(mark.PM)
		} else if h.ProgressTimeout > 0 {
			h.Progress = h.AcquiredAt
		}
		if ok && mark.CIP > 0 {
			h.Cancelled = time.UnixMilli(mark.CIP)
		}
		hs = append(hs, h)
	}
	return hs
}

// waiters reads (id, record) pairs; a record is "weight ttl_ms
// enqueued_ms channel declaration" (WREC in head.lua).
func (r *reader) waiters(v []any) []governor.Waiter {
	if len(v)%2 != 0 {
		r.fail("waiters: %d fields, not (id, record) pairs", len(v))
		return nil
	}
	var ws []governor.Waiter
	for i := 0; i+1 < len(v) && r.err == nil; i += 2 {
		w := governor.Waiter{ID: r.str(v[i], "a waiter's id")}
		f := r.record("waiter", w.ID, v[i+1], "weight ttl_ms enqueued_ms channel declaration", &w.Declaration)
		if f == nil {
			break
		}
		what := "in the record of waiter " + w.ID + ", the "
		w.Weight = int(r.int(f[0], what+"weight"))
		w.EnqueuedAt = time.UnixMilli(r.int(f[2], what+"enqueue time"))
		ws = append(ws, w)
	}
	return ws
}

// maxQueue bounds the queue length a reply may report: far above any
// real queue, low enough that a corrupt one allocates nothing huge.
const maxQueue = 1 << 24

// acquireReply reads acquire.lua's reply: the result, and the
// incarnation of the resource's state (0 when the reply gives none).
func acquireReply(key governor.Key, v []any) (governor.Result, int64, error) {
	res, err := acquireResult(key, v)
	var inc any
	switch {
	case err != nil && !errors.Is(err, governor.ErrTooHeavy):
	case len(v) == 6:
		inc = v[5]
	case len(v) >= 11:
		inc = v[1]
	}
	switch x := inc.(type) {
	case int64:
		return res, x, err
	case string: // the fast path's, as stored
		n, _ := strconv.ParseInt(x, 10, 64)
		return res, n, err
	}
	return res, 0, err
}

// acquireResult reads acquire.lua's reply v (see acquireReply).
func acquireResult(key governor.Key, v []any) (governor.Result, error) {
	r := &reader{op: "acquire", key: key}
	var res governor.Result
	if len(v) == 6 && r.int(v[0], "the code") == 1 {
		res.Outcome = governor.Granted
		res.Token = r.int(v[1], "the token")
		res.Expires = time.UnixMilli(r.int(v[2], "the expiry"))
		res.Limit = int(r.int(v[4], "the limit in force"))
		return res, r.err
	}
	if len(v) == 5 && r.int(v[0], "the code") == -3 {
		e := &governor.WithdrawnError{Resource: key.Resource, Kind: r.str(v[1], "the kind of the withdrawal"),
			By: r.str(v[2], "who withdrew it"), Detail: r.str(v[3], "the detail of the withdrawal"),
			At: time.UnixMilli(r.int(v[4], "the time of the withdrawal"))}
		if r.err != nil {
			return res, r.err
		}
		return res, e
	}
	if len(v) == 3 && r.int(v[0], "the code") == -5 {
		return res, cmp.Or(r.err, governor.CancelOthersRefused(key, r.str(v[1], "the holder"), r.str(v[2], "its user")))
	}
	if len(v) == 2 && r.int(v[0], "the code") == -4 {
		return res, cmp.Or(r.err, fmt.Errorf("%w: %s has max_queue %d waiters queued already", governor.ErrQueueFull, key.Resource, r.int(v[1], "max_queue")))
	}
	if !r.length(v, 11, true) {
		return res, r.err
	}
	code := r.int(v[0], "the code")
	st := governor.Status{Key: key, Limit: int(r.int(v[4], "the limit")), Used: int(r.int(v[5], "the weight used")),
		DriftLimit: int(r.int(v[7], "the drift limit")), Now: time.UnixMilli(r.int(v[8], "the time"))}
	st.CoolOff = coolOffEnd(r.int(v[9], "the end of the cool-off"), st.Now)
	st.Quarantine = coolOffEnd(r.int(v[10], "the end of the quarantine"), st.Now)
	qlen := r.int(v[6], "the queue length")
	if r.err != nil {
		return res, r.err
	}
	switch code {
	case 0:
		res.Outcome = governor.Refused
	case 2:
		res.Outcome = governor.Queued
		res.Position = int(r.int(v[3], "the queue position"))
	case -1:
		return res, fmt.Errorf("%w: the limit in force for %s is %d", governor.ErrTooHeavy, key.Resource, st.Limit)
	default:
		r.fail("code %d; want 1, 0, 2 or -1", code)
		return res, r.err
	}
	if qlen < 0 || qlen > maxQueue {
		r.fail("queue length %d; want 0 to %d", qlen, maxQueue)
		return res, r.err
	}
	// The queue is reported by length only (Status lists it in full):
	// listing 100,000 empty waiters cost each enqueue 10 ms here.
	st.Queued = int(qlen)
	st.Holders = r.holders(v[11:])
	res.Status = st
	return res, r.err
}

// coolOffEnd is the end of a cool-off (or a quarantine) stored as ms,
// or zero when it has passed (or none was stored).
func coolOffEnd(ms int64, now time.Time) time.Time {
	if t := time.UnixMilli(ms); ms > 0 && t.After(now) {
		return t
	}
	return time.Time{}
}

// statusReply reads status.lua's reply.
func statusReply(key governor.Key, v []any) (governor.Status, error) {
	r := &reader{op: "status", key: key}
	if !r.length(v, 8, false) {
		return governor.Status{}, r.err
	}
	var paused, live, liveAt, adapt, adaptMax, adaptOK int64
	st := governor.Status{Key: key, Now: time.UnixMilli(r.int(v[0], "the time"))}
	meta := r.list(v[1], "the meta fields")
	if len(meta)%2 != 0 {
		r.fail("meta fields: %d values, not (name, value) pairs", len(meta))
	}
	for i := 0; i+1 < len(meta) && r.err == nil; i += 2 {
		name := r.str(meta[i], "a meta field's name")
		n := r.int(meta[i+1], "meta field "+name)
		switch name {
		case "limit":
			st.Limit = int(n)
		case "drift":
			st.DriftLimit = int(n)
		case "acquired":
			st.Counters.Acquired = n
		case "busy":
			st.Counters.Busy = n
		case "waited":
			st.Counters.Waited = n
		case "released":
			st.Counters.Released = n
		case "lost":
			st.Counters.Lost = n
		case "reclaimed_expiry":
			st.Counters.ReclaimedExpiry = n
		case "reclaimed_dead":
			st.Counters.ReclaimedDead = n
		case "takeovers":
			st.Counters.Takeovers = n
		case "local_grants":
			st.Counters.LocalGrants = n
		case "paused":
			paused = n
		case "live":
			live = n
		case "live_at":
			liveAt = n
		case "cooloff":
			st.CoolOff = coolOffEnd(n, st.Now)
		case "quarantine":
			st.Quarantine = coolOffEnd(n, st.Now)
		case "adapt":
			adapt = n
		case "adapt_max":
			adaptMax = n
		case "adapt_ok":
			adaptOK = n
		case "signal_at":
			st.LastSignal = time.UnixMilli(n)
		}
	}
	st.Holders = r.holders(r.list(v[2], "the holders"))
	for _, h := range st.Holders {
		st.Used += h.Weight
	}
	st.Waiters = r.waiters(r.list(v[3], "the waiters"))
	for i := range st.Waiters {
		if st.Waiters[i].Weight == 0 {
			st.Waiters[i].Weight = st.Limit // exclusive: the limit in force (WREC in head.lua)
		}
	}
	if r.err != nil {
		return governor.Status{}, r.err
	}
	st.Histograms = r.stats(r.list(v[4], "the stats"))
	text := r.list(v[5], "the admin state")
	if len(text) != 3+backendkit.HoldHistory {
		r.fail("admin state: %d values; want paused_by, live_by, holdn and %d holds", len(text), backendkit.HoldHistory)
		return governor.Status{}, r.err
	}
	if paused > 0 {
		st.Paused = &governor.Paused{Since: time.UnixMilli(paused), By: r.str(text[0], "who paused it")}
	}
	if live > 0 {
		st.LiveLimit = &governor.LiveLimit{Limit: int(live), By: r.str(text[1], "who set the live limit"), At: time.UnixMilli(liveAt)}
	}
	if adapt > 0 {
		st.Adaptive = &governor.AdaptiveState{Limit: int(adapt), Max: int(adaptMax), Successes: int(adaptOK)}
	}
	st.Holds = r.holds(text[2], text[3:])
	if pol := r.list(v[6], "the queue policy"); r.length(pol, 2, false) {
		p, err := governor.ParsePolicy(r.str(pol[0], "the policy"))
		if err != nil {
			r.fail("%v", err)
		}
		st.Policy, st.DriftPolicy = p, r.str(pol[1], "the policy drift")
	}
	st.Shares = r.shares(r.list(v[7], "the capacity leases"), st)
	if r.err != nil {
		return governor.Status{}, r.err
	}
	return st, nil
}

// holds reads the ring of hold durations (HOLDS in head.lua): holdn, the
// holds recorded, and the ring's slots (ms), into the last ones, oldest
// first. A holdn that is not a number counts as none.
func (r *reader) holds(holdn any, ring []any) []time.Duration {
	s := r.str(holdn, "the count of holds")
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return nil
	}
	size := int64(len(ring))
	var out []time.Duration
	for i := max(0, n-size); i < n; i++ {
		slot := r.str(ring[i%size], "a hold duration")
		if slot == "" {
			continue // a slot lost: skipped
		}
		out = append(out, time.Duration(r.int(slot, "a hold duration"))*time.Millisecond)
	}
	return out
}
