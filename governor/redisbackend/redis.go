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
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/internal/backendkit"
	scripts "github.com/governor-dev/governor/scripts-lua"
)

var (
	acquireScript = newScript(scripts.Acquire)
	renewScript   = newScript(scripts.Renew)
	releaseScript = newScript(scripts.Release)
	cancelScript  = newScript(scripts.Cancel)
	reclaimScript = newScript(scripts.Reclaim)
	lostScript    = newScript(scripts.Lost)
	statusScript  = newScript(scripts.Status)
)

// holdersInRefusal caps the holders a refusal reports.
const holdersInRefusal = backendkit.RefusalHolders

// Prefix starts every key and channel governor owns.
const Prefix = "gov:"

// Backend is the Redis backend. Create it with New.
type Backend struct {
	rdb       redis.UniversalClient
	ownClient bool   // Close closes rdb
	channel   string // this instance's notification channel
	// channelArg is channel boxed once, as acquire.lua's argument.
	channelArg any

	mu      sync.Mutex
	pubsub  *redis.PubSub
	waiters map[string]waiter
	// handed holds the grants a release of this backend handed to its
	// waiters (release.lua's reply), by waiter id, until the waiter's
	// Acquire takes them or its Notify stops.
	handed map[string]governor.Result
	done   chan struct{}
	// Options of New.
	allowEviction bool
	noQuarantine  bool
	warn          func(string)
	evict         evictWatch // see watchEviction
	wit           *witness   // see Witness; nil: none

	// closed: every call after Close is governor.ErrClosed, even on a
	// client that stays open (it belongs to the caller).
	closed atomic.Bool

	// keys caches each resource's keys (governor.Key -> *resourceKeys),
	// saving seven allocations per call; it holds one small entry per
	// resource this backend has touched.
	keys sync.Map
	// rates holds the rate keys listed in their project's index.
	rates sync.Map
	// decl is the last declaration marshalled: a Governor declares the
	// same holder on every acquire.
	decl atomic.Pointer[declCache]
	// batch sends acquires and releases issued at the same instant in one
	// pipeline (batch.go).
	batch batcher
	// spends holds the spend reservations this backend made and has not
	// settled (spendRef): renewed with the lease of the same id.
	spends sync.Map
}

type resourceKeys struct {
	keys       []string
	boxed      []any       // keys, boxed once for runBoxed
	withStats  []string    // keys, then the stats hash (StatsKey)
	withCap    []string    // keys, then the capacity hash (CapacityKey)
	forStatus  []string    // withStats, then the capacity hash (status.lua, forget.lua)
	registered atomic.Bool // listed in the project index
	// maxTTL is the longest lease TTL, in ms, this backend has asked
	// for on the resource: how long grants are held back when it finds
	// the resource's data lost (see LossQuarantine).
	maxTTL atomic.Int64
	// queued lists the waiter ids this backend saw queued on the
	// resource (id -> the server time, ms, of the last reply saying so),
	// until granted, refused or cancelled: such a waiter re-queuing into
	// a resource without state, or into a state born after that time
	// (its incarnation, lib.lua), proves the state was lost.
	queued sync.Map
	// held lists the leases this backend was granted on the resource
	// (id -> its fencing token), until released or lost: such a lease
	// renewing into a resource without state, or into a state born after
	// its token, proves the state was lost (a renewal from elsewhere, as
	// the CLI's renew, proves it when it carries the lease's token).
	held sync.Map
	// wkey is the resource's key in the machine's witness (Witness).
	wkey string
}

// lossMS returns how long the scripts hold new grants back on the
// resource when they find its data lost, after noting ttl (0: none) as
// asked for: the longest TTL asked for, or 0 when LossQuarantine is off.
func (b *Backend) lossMS(r *resourceKeys, ttl time.Duration) int64 {
	ms := ttl.Milliseconds()
	for {
		cur := r.maxTTL.Load()
		if ms <= cur || r.maxTTL.CompareAndSwap(cur, ms) {
			break
		}
	}
	if b.noQuarantine {
		return 0
	}
	return r.maxTTL.Load()
}

// declCache is the last declaration marshalled, its JSON boxed once as
// a script argument (each boxing of a string allocates).
type declCache struct {
	d    governor.Declaration
	json any
}

// Backend implements the contract and its optional rates and budgets
// (the conformance cases of a capability skip on a backend without it,
// so a signature that drifted must not compile).
var (
	_ governor.Backend       = (*Backend)(nil)
	_ governor.RateBackend   = (*Backend)(nil)
	_ governor.BudgetBackend = (*Backend)(nil)
)

// An Option configures New.
type Option func(*Backend)

// OwnClient makes the backend's Close close its client too, for a client
// made only for it (as by NewClient).
func OwnClient() Option { return func(b *Backend) { b.ownClient = true } }

// LossQuarantine turns the quarantine after lost data on or off (on by
// default). Redis restarted without persistence, or failed over to a
// replica behind, forgets holders whose processes still run; until each
// renews (up to a heartbeat) a waiter could be granted beside it. When a
// script finds evidence of such a loss on a resource (a lease this
// backend was granted renewing, or a waiter it saw queued re-queuing,
// into a resource without state; holders vanished from beside their
// state), new grants
// on it wait for the longest lease TTL this backend asked for there. Off,
// the window stays, covered only by fencing tokens.
func LossQuarantine(on bool) Option { return func(b *Backend) { b.noQuarantine = !on } }

// New returns a backend on rdb. It subscribes to its own notification
// channel (one connection per backend, whatever the number of waiters)
// and fails if Redis cannot be reached or does not run scripts, or if a
// master's maxmemory-policy can evict governor's keys (ErrBackend naming
// it; AllowEviction accepts it; a policy that cannot be read is a Warn
// line). Close
// closes the subscription; rdb stays the caller's unless OwnClient is
// given (and, when New fails, in any case).
func New(ctx context.Context, rdb redis.UniversalClient, opts ...Option) (*Backend, error) {
	if rdb == nil || reflect.ValueOf(rdb).Kind() == reflect.Pointer && reflect.ValueOf(rdb).IsNil() {
		return nil, fmt.Errorf("%w: nil Redis client %T; pass the client of redis.NewClient or NewClient", governor.ErrInvalid, rdb)
	}
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	be := &Backend{rdb: rdb, channel: Prefix + "notify:" + hex.EncodeToString(b[:]),
		waiters: map[string]waiter{}, handed: map[string]governor.Result{}, done: make(chan struct{}), batch: batcher{rdb: rdb}}
	be.channelArg = be.channel
	for _, o := range opts {
		o(be)
	}
	if be.wit != nil {
		be.wit.warn = be.warn
	}
	ps := rdb.Subscribe(ctx, be.channel)
	// Wait for the confirmation so that no grant published after New
	// returns can be missed.
	if _, err := ps.Receive(ctx); err != nil {
		_ = ps.Close()
		return nil, fmt.Errorf("governor: redis: subscribe: %w", err)
	}
	be.pubsub = ps
	if err := be.checkEviction(ctx); err != nil {
		_ = ps.Close()
		return nil, err
	}
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

// allScripts are the scripts New loads. Those of rate-limit signals
// (cooloff.lua, adapt.lua, note.lua) are left to their first run
// (EVALSHA, then EVAL): they are rare, and every script loaded here is a
// round trip each process pays at open when the server lacks it.
var allScripts = []*script{acquireScript, renewScript, releaseScript, cancelScript,
	reclaimScript, lostScript, statusScript, takeoverScript, rateScript, seqScript, observeScript, forgetScript, adminScript,
	renewManyScript, manyScript}

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
	// The missing ones load side by side, each on a connection of the
	// pool: over a distant link one round trip, not one per script.
	errs := make([]error, len(allScripts))
	var wg sync.WaitGroup
	for i, s := range allScripts {
		if have[i] {
			continue
		}
		wg.Go(func() { errs[i] = s.Load(ctx, rdb).Err() })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// probeScript proves the server runs scripts.
var probeScript = newScript(func() string { return "return 1" })

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
	stats := append(ks[:len(ks):len(ks)], StatsKey(key))
	r, _ := b.keys.LoadOrStore(key, &resourceKeys{keys: ks, boxed: box(ks), withStats: stats,
		withCap: append(ks[:len(ks):len(ks)], CapacityKey(key)), forStatus: append(stats[:len(stats):len(stats)], CapacityKey(key)),
		wkey: witnessKey(key.Project, key.Resource)})
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

// acquireOptional is how many of acquire.lua's arguments come before
// those it takes as their defaults when absent (its ARGV 12-20).
const acquireOptional = 11

// trimDefaults cuts off the arguments after the first n that hold their
// default (0, "" or false; go-redis sends a bool as 1 or 0) up to the
// end: the server pays for every argument a script is passed. A string
// "0" is not a default: a priority class, fair key or supersede key may
// be named "0".
func trimDefaults(args []any, n int) []any {
	end := len(args)
	for end > n {
		switch a := args[end-1].(type) {
		case string:
			if a != "" {
				return args[:end]
			}
		case int64:
			if a != 0 {
				return args[:end]
			}
		case bool:
			if a {
				return args[:end]
			}
		default:
			return args[:end]
		}
		end--
	}
	return args[:end]
}

// Script arguments that take one of a few values, boxed once: a string
// boxed per call allocates.
var (
	argFalse, argTrue any = "0", "1"
	argFail, argWait  any = "fail", "wait"
)

// flag is a script's boolean argument.
func flag(b bool) any {
	if b {
		return argTrue
	}
	return argFalse
}

// declJSON marshals a declaration, remembering the last one; it returns
// the JSON boxed as a script argument.
func (b *Backend) declJSON(d governor.Declaration) (any, error) {
	if c := b.decl.Load(); c != nil && c.d == d {
		return c.json, nil
	}
	j, err := json.Marshal(d)
	if err != nil {
		return "", err
	}
	c := &declCache{d: d, json: any(string(j))}
	b.decl.Store(c)
	return c.json, nil
}

// Acquire implements governor.Backend.
func (b *Backend) Acquire(ctx context.Context, req governor.Request) (governor.Result, error) {
	if req.Takeover != "" {
		return b.acquireTakeover(ctx, req.Key, req.Takeover, req)
	}
	if req.Capacity != nil {
		return b.acquireCapacity(ctx, req)
	}
	if b.closed.Load() {
		return governor.Result{}, governor.ErrClosed
	}
	decl, err := b.declJSON(req.Declaration)
	if err != nil {
		return governor.Result{}, err
	}
	mode := argFail
	if req.Mode == governor.Wait {
		mode = argWait
	}
	r := b.resource(req.Key)
	if res, ok := b.taken(req); ok {
		r.queued.Delete(req.ID)
		r.held.Store(req.ID, res.Token)
		return res, nil
	}
	// The evidence that the resource had state (acquire.lua's ARGV 13):
	// for a new request the incarnation this machine witnessed, for a
	// waiter re-queuing when it was last seen queued.
	evidence := int64(0)
	if req.New {
		evidence = b.wit.seen('r', r.wkey)
	} else if at, ok := r.queued.Load(req.ID); ok {
		evidence = at.(int64)
	}
	v, err := b.batch.run(ctx, acquireScript, r, trimDefaults([]any{req.ID, req.Limit, req.Weight,
		req.TTL.Milliseconds(), mode, req.QueueTTL.Milliseconds(), b.channelArg, decl, holdersInRefusal, flag(req.New), req.Secret,
		b.lossMS(r, req.TTL), evidence, req.Policy, req.Priority, req.FairKey, req.Supersede, req.CancelInProgress,
		req.Exclusive, req.CancelOthers}, acquireOptional)...).Slice()
	if err != nil {
		return governor.Result{}, wrap("acquire", err)
	}
	if len(v) == 1 && v[0] == int64(-2) {
		return governor.Result{}, governor.NotOwner(req.Key, req.ID)
	}
	// Listed only after the script ran: a failed acquire leaves nothing.
	b.register(ctx, req.Key, r, len(v) == 6 && v[0] == int64(1) && v[3] == int64(1))
	res, inc, err := acquireReply(req.Key, v)
	b.wit.saw('r', r.wkey, inc)
	var gone *governor.WithdrawnError
	if errors.As(err, &gone) {
		gone.WaiterID = req.ID
	}
	if err == nil && res.Outcome == governor.Queued {
		r.queued.Store(req.ID, res.Status.Now.UnixMilli())
	} else if !req.New && evidence > 0 || err == nil && res.Outcome != governor.Queued {
		r.queued.Delete(req.ID)
	}
	if err == nil && res.Outcome == governor.Granted {
		r.held.Store(req.ID, res.Token)
	}
	return res, err
}

// Release implements governor.Backend.
func (b *Backend) Release(ctx context.Context, key governor.Key, id, secret string) error {
	if b.closed.Load() {
		return governor.ErrClosed
	}
	r := b.resource(key)
	sent := time.Now()
	return b.released(key, r, id, b.batch.run(ctx, releaseScript, r, id, secret, b.channelArg), sent)
}

// released reads the reply of release.lua for lease id of key (r), sent
// at sent, and hands on the grants it lists (hand).
func (b *Backend) released(key governor.Key, r *resourceKeys, id string, cmd *redis.Cmd, sent time.Time) error {
	v, err := cmd.Result()
	var n int64
	switch v := v.(type) {
	case int64:
		n = v
	case []any:
		if len(v) > 0 {
			n, _ = v[0].(int64)
			if n == 1 {
				b.hand(key, v[1:], sent)
			}
		}
	}
	if err == nil && n == 0 && v != int64(0) {
		err = fmt.Errorf("unexpected reply %v", v)
	}
	if err != nil {
		b.wakeAll(key) // the script may have run, and handed grants to them
	}
	if n != -1 {
		r.held.Delete(id)
	}
	if err != nil {
		return wrap("release", err)
	}
	switch n {
	case 0:
		return governor.ErrNotHeld
	case -1:
		return governor.NotOwner(key, id)
	}
	return nil
}

// Cancel implements governor.Backend.
func (b *Backend) Cancel(ctx context.Context, key governor.Key, id, secret string) error {
	if b.closed.Load() {
		return governor.ErrClosed
	}
	r := b.resource(key)
	n, err := cancelScript.Run(ctx, b.rdb, r.keys, id, secret).Int()
	if err != nil {
		return wrap("cancel", err)
	}
	if n == -1 {
		return governor.NotOwner(key, id)
	}
	r.queued.Delete(id)
	r.held.Delete(id)
	return nil
}

// adminReclaim implements governor.Backend's Admin of eventkind.Reclaimed.
func (b *Backend) adminReclaim(ctx context.Context, key governor.Key, id string, token int64) (bool, error) {
	if b.closed.Load() {
		return false, governor.ErrClosed
	}
	n, err := reclaimScript.Run(ctx, b.rdb, b.resource(key).withCap, id, strconv.FormatInt(token, 10)).Int()
	if err != nil {
		return false, wrap("reclaim", err)
	}
	return n == 1, nil
}

// recordLost implements governor.Backend's Record of eventkind.Lost.
func (b *Backend) recordLost(ctx context.Context, key governor.Key, id string, token int64, reason string) error {
	if b.closed.Load() {
		return governor.ErrClosed
	}
	return wrap("count lost", lostScript.Run(ctx, b.rdb, b.resource(key).keys, id, strconv.FormatInt(token, 10), reason).Err())
}

// Status implements governor.Backend.
func (b *Backend) Status(ctx context.Context, key governor.Key) (governor.Status, error) {
	if b.closed.Load() {
		return governor.Status{}, governor.ErrClosed
	}
	v, err := statusScript.Run(ctx, b.rdb, b.resource(key).forStatus).Slice()
	if err != nil {
		return governor.Status{}, wrap("status", err)
	}
	return statusReply(key, v)
}

// Resources implements governor.Backend.
func (b *Backend) Resources(ctx context.Context, project string) ([]string, error) {
	if b.closed.Load() {
		return nil, governor.ErrClosed
	}
	names, err := b.rdb.SMembers(ctx, indexKey(project)).Result()
	if err != nil {
		return nil, wrap("resources", err)
	}
	return names, nil
}

// Close implements governor.Backend: it ends the subscription, and closes
// the Redis client too when New was given OwnClient (otherwise the client
// stays open: it belongs to the caller). Every call after it is
// governor.ErrClosed.
func (b *Backend) Close() error {
	if b.closed.Swap(true) {
		return nil
	}
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
