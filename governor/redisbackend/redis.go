// Package redisbackend keeps governor's state in Redis: every change is
// one Lua script (time from the server's TIME), and all keys of one
// resource share a hash tag, so it works on a single node, Sentinel and
// Cluster alike.
package redisbackend

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/governor-dev/governor/governor"
	scripts "github.com/governor-dev/governor/scripts-lua"
)

var (
	acquireScript = redis.NewScript(scripts.Acquire)
	renewScript   = redis.NewScript(scripts.Renew)
	releaseScript = redis.NewScript(scripts.Release)
	cancelScript  = redis.NewScript(scripts.Cancel)
	reclaimScript = redis.NewScript(scripts.Reclaim)
	lostScript    = redis.NewScript(scripts.Lost)
	statusScript  = redis.NewScript(scripts.Status)
)

// holdersInRefusal caps the holders a refusal reports.
const holdersInRefusal = 16

// Prefix starts every key and channel governor owns.
const Prefix = "gov:"

// Backend is the Redis backend. Create it with New.
type Backend struct {
	rdb       redis.UniversalClient
	ownClient bool   // Close closes rdb
	channel   string // this instance's notification channel

	mu      sync.Mutex
	pubsub  *redis.PubSub
	waiters map[string]chan struct{}
	closed  bool
	done    chan struct{}

	// keys caches each resource's keys (governor.Key -> *resourceKeys),
	// saving seven allocations per call; it holds one small entry per
	// resource this backend has touched.
	keys sync.Map
	// rates holds the rate keys listed in their project's index.
	rates sync.Map
	// decl is the last declaration marshalled: a Governor declares the
	// same holder on every acquire.
	decl atomic.Pointer[declCache]
}

type resourceKeys struct {
	keys       []string
	withStats  []string    // keys, then the stats hash (StatsKey)
	registered atomic.Bool // listed in the project index
}

type declCache struct {
	d    governor.Declaration
	json string
}

var _ governor.Backend = (*Backend)(nil)

// An Option configures New.
type Option func(*Backend)

// OwnClient makes the backend's Close close its client too, for a client
// made only for it (as by NewClient).
func OwnClient() Option { return func(b *Backend) { b.ownClient = true } }

// New returns a backend on rdb. It subscribes to its own notification
// channel (one connection per backend, whatever the number of waiters)
// and fails if Redis cannot be reached or does not run scripts. Close
// closes the subscription; rdb stays the caller's unless OwnClient is
// given (and, when New fails, in any case).
func New(ctx context.Context, rdb redis.UniversalClient, opts ...Option) (*Backend, error) {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	be := &Backend{rdb: rdb, channel: Prefix + "notify:" + hex.EncodeToString(b[:]),
		waiters: map[string]chan struct{}{}, done: make(chan struct{})}
	for _, o := range opts {
		o(be)
	}
	ps := rdb.Subscribe(ctx, be.channel)
	// Wait for the confirmation so that no grant published after New
	// returns can be missed.
	if _, err := ps.Receive(ctx); err != nil {
		_ = ps.Close()
		return nil, fmt.Errorf("governor: redis: subscribe: %w", err)
	}
	be.pubsub = ps
	// Load every script now: this proves the server runs scripts (and
	// lets the user run them) before anything is acquired, and spares the
	// first acquire the NOSCRIPT round trip, which would eat into its
	// lease's local deadline.
	if err := loadScripts(ctx, rdb); err != nil {
		_ = ps.Close()
		return nil, wrap("load scripts", err)
	}
	// SCRIPT LOAD may work where EVALSHA does not (renamed away): try one.
	if err := probeScript.Run(ctx, rdb, nil).Err(); err != nil {
		_ = ps.Close()
		return nil, wrap("run a script (does this server allow EVALSHA?)", err)
	}
	go be.dispatch(ps.Channel())
	return be, nil
}

// allScripts are the scripts New loads.
var allScripts = []*redis.Script{acquireScript, renewScript, releaseScript, cancelScript,
	reclaimScript, lostScript, statusScript, takeoverScript, rateScript, seqScript, observeScript, forgetScript}

// loadScripts loads those of allScripts the server does not have. Usually
// an earlier process loaded them all: one SCRIPT EXISTS round trip then
// replaces ten SCRIPT LOADs, which a short CLI run against a distant
// server would feel. A server (or ACL) that refuses SCRIPT EXISTS gets
// them all loaded.
func loadScripts(ctx context.Context, rdb redis.UniversalClient) error {
	hashes := make([]string, len(allScripts))
	for i, s := range allScripts {
		hashes[i] = s.Hash()
	}
	have, err := rdb.ScriptExists(ctx, hashes...).Result()
	if err != nil || len(have) != len(allScripts) {
		have = make([]bool, len(allScripts))
	}
	for i, s := range allScripts {
		if have[i] {
			continue
		}
		if err := s.Load(ctx, rdb).Err(); err != nil {
			return err
		}
	}
	return nil
}

// probeScript proves the server runs scripts.
var probeScript = redis.NewScript("return 1")

func (b *Backend) dispatch(ch <-chan *redis.Message) {
	defer close(b.done)
	for m := range ch {
		b.mu.Lock()
		w := b.waiters[m.Payload]
		b.mu.Unlock()
		if w != nil {
			select {
			case w <- struct{}{}:
			default:
			}
		}
	}
}

// Notify implements governor.Backend.
func (b *Backend) Notify(key governor.Key, id string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	b.mu.Lock()
	b.waiters[id] = ch
	b.mu.Unlock()
	return ch, func() {
		b.mu.Lock()
		delete(b.waiters, id)
		b.mu.Unlock()
	}
}

// Keys returns the six keys of a resource, in the order of lib.lua.
func Keys(key governor.Key) []string {
	base := Prefix + "{" + key.Project + "/" + key.Resource + "}:"
	return []string{base + "holders", base + "state", base + "queue", base + "queue-exp", base + "queue-rec", base + "events"}
}

// resource returns the cached keys of key. The slice is shared: callers
// must not change it.
func (b *Backend) resource(key governor.Key) *resourceKeys {
	if r, ok := b.keys.Load(key); ok {
		return r.(*resourceKeys)
	}
	ks := Keys(key)
	r, _ := b.keys.LoadOrStore(key, &resourceKeys{keys: ks, withStats: append(ks[:len(ks):len(ks)], StatsKey(key))})
	return r.(*resourceKeys)
}

func indexKey(project string) string { return Prefix + "{" + project + "}:resources" }

// register lists key in its project's index, once per backend, and
// again when the acquire found the resource without state (fresh): it
// was new, or forgotten (Forget) and dropped from the index since.
func (b *Backend) register(ctx context.Context, key governor.Key, r *resourceKeys, fresh bool) {
	if r.registered.Load() && !fresh {
		return
	}
	if err := b.rdb.SAdd(ctx, indexKey(key.Project), key.Resource).Err(); err == nil {
		r.registered.Store(true)
	}
}

// declJSON marshals a declaration, remembering the last one.
func (b *Backend) declJSON(d governor.Declaration) (string, error) {
	if c := b.decl.Load(); c != nil && c.d == d {
		return c.json, nil
	}
	j, err := json.Marshal(d)
	if err != nil {
		return "", err
	}
	c := &declCache{d: d, json: string(j)}
	b.decl.Store(c)
	return c.json, nil
}

// Acquire implements governor.Backend.
func (b *Backend) Acquire(ctx context.Context, req governor.Request) (governor.Result, error) {
	decl, err := b.declJSON(req.Declaration)
	if err != nil {
		return governor.Result{}, err
	}
	mode := "fail"
	if req.Mode == governor.Wait {
		mode = "wait"
	}
	r := b.resource(req.Key)
	isNew := "0"
	if req.New {
		isNew = "1"
	}
	v, err := acquireScript.Run(ctx, b.rdb, r.keys, req.ID, req.Limit, req.Weight,
		req.TTL.Milliseconds(), mode, req.QueueTTL.Milliseconds(), b.channel, decl, holdersInRefusal, isNew).Slice()
	if err != nil {
		return governor.Result{}, wrap("acquire", err)
	}
	// Listed only after the script ran: a failed acquire leaves nothing.
	b.register(ctx, req.Key, r, len(v) == 4 && toInt(v[0]) == 1 && toInt(v[3]) == 1)
	return parseReply(req.Key, v)
}

func parseReply(key governor.Key, v []any) (governor.Result, error) {
	var r governor.Result
	if (len(v) == 3 || len(v) == 4) && toInt(v[0]) == 1 {
		r.Outcome = governor.Granted
		r.Token = toInt(v[1])
		r.Expires = time.UnixMilli(toInt(v[2]))
		return r, nil
	}
	if len(v) < 9 {
		return r, fmt.Errorf("governor: redis: short acquire reply (%d fields)", len(v))
	}
	code := toInt(v[0])
	st := governor.Status{Key: key, Limit: int(toInt(v[4])), Used: int(toInt(v[5])), DriftLimit: int(toInt(v[7])),
		Now: time.UnixMilli(toInt(v[8]))}
	switch code {
	case 0:
		r.Outcome = governor.Refused
	case 2:
		r.Outcome = governor.Queued
		r.Position = int(toInt(v[3]))
	case -1:
		return r, fmt.Errorf("%w: the limit in force for %s is %d", governor.ErrTooHeavy, key.Resource, st.Limit)
	default:
		return r, fmt.Errorf("governor: redis: unknown acquire code %d", code)
	}
	// The queue is reported by length only; Status lists it in full.
	st.Waiters = make([]governor.Waiter, toInt(v[6]))
	hs, err := parseHolders(v[9:])
	if err != nil {
		return r, err
	}
	st.Holders = hs
	r.Status = st
	return r, nil
}

// parseHolders reads (id, record, expiry) triples; a record is
// "weight ttl_ms token acquired_ms declaration", and the last heartbeat
// is the expiry minus the ttl.
func parseHolders(v []any) ([]governor.Holder, error) {
	var hs []governor.Holder
	for i := 0; i+2 < len(v); i += 3 {
		exp := toInt(v[i+2])
		h := governor.Holder{LeaseID: toString(v[i]), Expires: time.UnixMilli(exp)}
		f := strings.SplitN(toString(v[i+1]), " ", 5)
		if len(f) != 5 {
			return nil, fmt.Errorf("governor: redis: corrupt record of lease %s", h.LeaseID)
		}
		h.Weight = int(atoi(f[0]))
		h.Heartbeat = time.UnixMilli(exp - atoi(f[1]))
		h.Token = atoi(f[2])
		h.AcquiredAt = time.UnixMilli(atoi(f[3]))
		if err := json.Unmarshal([]byte(f[4]), &h.Declaration); err != nil {
			return nil, fmt.Errorf("governor: redis: corrupt declaration of lease %s: %w", h.LeaseID, err)
		}
		hs = append(hs, h)
	}
	return hs, nil
}

// Renew implements governor.Backend.
func (b *Backend) Renew(ctx context.Context, key governor.Key, id string, ttl time.Duration) (time.Time, error) {
	v, err := renewScript.Run(ctx, b.rdb, b.resource(key).keys, id, ttl.Milliseconds()).Slice()
	if err != nil {
		return time.Time{}, wrap("renew", err)
	}
	if len(v) < 2 || toInt(v[0]) != 1 {
		return time.Time{}, governor.ErrLeaseLost
	}
	return time.UnixMilli(toInt(v[1])), nil
}

// Release implements governor.Backend.
func (b *Backend) Release(ctx context.Context, key governor.Key, id string) error {
	n, err := releaseScript.Run(ctx, b.rdb, b.resource(key).keys, id).Int()
	if err != nil {
		return wrap("release", err)
	}
	if n == 0 {
		return governor.ErrNotHeld
	}
	return nil
}

// Cancel implements governor.Backend.
func (b *Backend) Cancel(ctx context.Context, key governor.Key, id string) error {
	return wrap("cancel", cancelScript.Run(ctx, b.rdb, b.resource(key).keys, id).Err())
}

// Reclaim implements governor.Backend.
func (b *Backend) Reclaim(ctx context.Context, key governor.Key, id string, token int64) (bool, error) {
	n, err := reclaimScript.Run(ctx, b.rdb, b.resource(key).keys, id, strconv.FormatInt(token, 10)).Int()
	if err != nil {
		return false, wrap("reclaim", err)
	}
	return n == 1, nil
}

// CountLost implements governor.Backend.
func (b *Backend) CountLost(ctx context.Context, key governor.Key, id string, token int64) error {
	return wrap("count lost", lostScript.Run(ctx, b.rdb, b.resource(key).keys, id, strconv.FormatInt(token, 10)).Err())
}

// Status implements governor.Backend.
func (b *Backend) Status(ctx context.Context, key governor.Key) (governor.Status, error) {
	v, err := statusScript.Run(ctx, b.rdb, b.resource(key).withStats).Slice()
	if err != nil {
		return governor.Status{}, wrap("status", err)
	}
	if len(v) != 5 {
		return governor.Status{}, fmt.Errorf("governor: redis: short status reply")
	}
	st := governor.Status{Key: key, Now: time.UnixMilli(toInt(v[0]))}
	meta, _ := v[1].([]any)
	for i := 0; i+1 < len(meta); i += 2 {
		n := atoi(toString(meta[i+1]))
		switch toString(meta[i]) {
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
		}
	}
	hv, _ := v[2].([]any)
	if st.Holders, err = parseHolders(hv); err != nil {
		return st, err
	}
	for _, h := range st.Holders {
		st.Used += h.Weight
	}
	wv, _ := v[3].([]any)
	for i := 0; i+1 < len(wv); i += 2 {
		w := governor.Waiter{ID: toString(wv[i])}
		// "weight ttl enqueued channel declaration"
		f := strings.SplitN(toString(wv[i+1]), " ", 5)
		if len(f) == 5 {
			w.Weight = int(atoi(f[0]))
			w.EnqueuedAt = time.UnixMilli(atoi(f[2]))
			_ = json.Unmarshal([]byte(f[4]), &w.Declaration)
		}
		st.Waiters = append(st.Waiters, w)
	}
	sv, _ := v[4].([]any)
	st.Histograms = parseStats(sv)
	return st, nil
}

// Resources implements governor.Backend.
func (b *Backend) Resources(ctx context.Context, project string) ([]string, error) {
	names, err := b.rdb.SMembers(ctx, indexKey(project)).Result()
	if err != nil {
		return nil, wrap("resources", err)
	}
	return names, nil
}

// Close implements governor.Backend: it ends the subscription, and closes
// the Redis client too when New was given OwnClient (otherwise the client
// stays open: it belongs to the caller).
func (b *Backend) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	b.mu.Unlock()
	err := b.pubsub.Close()
	<-b.done
	if b.ownClient {
		if cerr := b.rdb.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// wrap names the operation in an error. An error reply from the server
// (a script error, WRONGTYPE, NOPERM) is governor.ErrBackend, final;
// transient replies (LOADING, BUSY, TRYAGAIN, MASTERDOWN, CLUSTERDOWN,
// READONLY after a failover) and transport failures are left retryable.
func wrap(op string, err error) error {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var rerr redis.Error
	if errors.As(err, &rerr) && !isTransient(rerr.Error()) {
		msg := rerr.Error()
		if strings.Contains(msg, "WRONGTYPE") {
			return fmt.Errorf("%w: redis: %s: a key governor owns holds a value of the wrong type (written by something else?): %s",
				governor.ErrBackend, op, msg)
		}
		return fmt.Errorf("%w: redis: %s: %s", governor.ErrBackend, op, msg)
	}
	return fmt.Errorf("governor: redis: %s: %w", op, err)
}

func isTransient(msg string) bool {
	for _, p := range []string{"LOADING", "BUSY", "TRYAGAIN", "MASTERDOWN", "CLUSTERDOWN", "READONLY", "MOVED", "ASK"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

func toInt(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case string:
		return atoi(x)
	}
	return 0
}

func toString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	}
	return ""
}

func atoi(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}
