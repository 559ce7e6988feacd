package conformance

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/capacity"
	"github.com/governor-dev/governor/governor/eventkind"
	"github.com/governor-dev/governor/governor/filebackend"
	"github.com/governor-dev/governor/governor/redisbackend"
	"github.com/governor-dev/governor/internal/redistest"
)

// TestDifferential drives the file backend, miniredis and a real Redis
// with the same random operation sequences and compares everything they
// answer: outcomes, errors by class, queue positions, used and limit,
// holders and their weights, waiters in order, counters and events.
// Tokens and times differ between stores, so they are compared by
// relation: each store's tokens increase with every grant, and a
// takeover's token is above the lease it replaced. Every operation both
// backends have is drawn (diffOps). Leases and queue entries live long
// enough that nothing expires here: real Redis's clock cannot be moved;
// TestDifferentialClock moves time on the stores whose clock can be.
//
// GOVERNOR_DIFF_SEED=N replays the sequence of one seed (printed on
// failure); GOVERNOR_DIFF_ROUNDS sets how many sequences run.
func TestDifferential(t *testing.T) {
	differential(t, nil, false)
}

// diffPolicy is the queue policy of TestDifferentialPolicy: classes with
// a reserve and a cap, a bounded queue, eager (fairness is left out: its
// ties between keys may go either way, by design).
var diffPolicy = governor.Policy{Classes: []governor.Class{{Name: "critical", Reserve: 1}, {Name: "default"}, {Name: "batch", Cap: 1}},
	MaxOvertakes: 2, MaxQueue: 4, Eager: true}

// TestDifferentialPolicy is TestDifferential under diffPolicy, each
// acquire in a random class, some with a supersede key (and
// cancel-in-progress).
func TestDifferentialPolicy(t *testing.T) {
	differential(t, &diffPolicy, false)
}

// TestDifferentialClock is TestDifferential with time moved between
// steps (leases and queue entries expire, cool-offs end, forgotten
// resources age, rate limits refill), with and without diffPolicy, on
// the stores whose clock a test moves: the file backend and miniredis
// (which runs the same scripts as Redis).
func TestDifferentialClock(t *testing.T) {
	t.Run("fifo", func(t *testing.T) { differential(t, nil, true) })
	t.Run("policy", func(t *testing.T) { differential(t, &diffPolicy, true) })
}

// diffStore is one store a sequence runs on; advance, when set, moves
// its clock.
type diffStore struct {
	name    string
	open    func(t *testing.T) governor.Backend
	advance func(d time.Duration)
}

// diffStores are the stores of a differential run: with clocked, the
// file backend and miniredis on clocks the test moves; else the file
// backend, miniredis and a real Redis on real time.
func diffStores(t *testing.T, clocked bool) []diffStore {
	m := miniredis.RunT(t)
	dir := t.TempDir()
	var boot atomic.Int64
	boot.Store(int64(time.Hour))
	fileOpts := filebackend.Options{}
	if clocked {
		fileOpts.Clock = func() time.Duration { return time.Duration(boot.Load()) }
		wall := time.Now().Add(-time.Hour)
		fileOpts.Wall = func() time.Time { return wall.Add(time.Duration(boot.Load())) }
	}
	stores := []diffStore{
		{name: "file", open: func(t *testing.T) governor.Backend {
			b, err := filebackend.New(dir, fileOpts)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}},
		{name: "miniredis", open: func(t *testing.T) governor.Backend { return openRedis(t, m.Addr()) }},
	}
	if clocked {
		now := time.Now()
		m.SetTime(now)
		stores[0].advance = func(d time.Duration) { boot.Add(int64(d)) }
		stores[1].advance = func(d time.Duration) {
			now = now.Add(d)
			m.SetTime(now)
			m.FastForward(d)
		}
		return stores
	}
	server := redistest.Start(t)
	return append(stores, diffStore{name: "redis", open: func(t *testing.T) governor.Backend { return openRedis(t, server.Addr) }})
}

func differential(t *testing.T, policy *governor.Policy, clocked bool) {
	rounds, steps := 6, 60
	if n, err := strconv.Atoi(os.Getenv("GOVERNOR_DIFF_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	seed := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("GOVERNOR_DIFF_SEED"), 10, 64); err == nil {
		seed, rounds = s, 1
	}
	stores := diffStores(t, clocked)
	for r := range rounds {
		s := seed + uint64(r)
		ops := diffOps(rand.New(rand.NewPCG(s, 0)), steps, policy != nil, clocked)
		project := fmt.Sprintf("diff-%d", s)
		var runs []*diffRun
		for _, st := range stores {
			b := st.open(t)
			run := &diffRun{store: st.name, b: asFull(t, b), project: project, tokens: map[string]int64{}, last: map[string]int64{}, policy: policy,
				advance: st.advance}
			for _, op := range ops {
				run.do(op)
			}
			_ = b.Close()
			runs = append(runs, run)
		}
		for _, run := range runs {
			if run.broken != "" {
				t.Fatalf("seed %d (GOVERNOR_DIFF_SEED=%d to replay): %s: %s", s, s, run.store, run.broken)
			}
		}
		for i, want := range runs[0].log {
			for _, run := range runs[1:] {
				if got := run.log[i]; got != want {
					t.Fatalf("seed %d (GOVERNOR_DIFF_SEED=%d to replay), step %d, %s:\n%s: %s\n%s: %s\nsteps before on %s: %v",
						s, s, i, ops[i], runs[0].store, want, run.store, got, ops[i].resource, before(ops[:i], ops[i].resource))
				}
			}
		}
	}
}

// before lists the steps of ops on resource res.
func before(ops []diffOp, res string) []string {
	var out []string
	for _, o := range ops {
		if o.resource == res {
			out = append(out, o.String())
		}
	}
	return out
}

func openRedis(t testing.TB, addr string) full {
	t.Helper()
	rdb := redistest.Client(addr)
	b, err := redisbackend.New(context.Background(), rdb, redisbackend.OwnClient())
	if err != nil {
		_ = rdb.Close()
		t.Fatal(err)
	}
	return b
}

// diffOp is one step: an operation on one resource, naming leases by
// logical ids (the same on every store).
type diffOp struct {
	// acquire, poll, renew, release, cancel, reclaim, takeover, withdraw,
	// pause, resume, limit, touch, renewbatch, cooloff, adapt, forget,
	// reserve, adjust, adjustsettle, learn, lost, observe, seq, degraded,
	// advance;
	// breserve, ratebudget, bsettle, badmin (differential_budget_test.go);
	// capacity, rateshare (differential_capacity_test.go)
	kind     string
	resource string
	id       string   // the lease or waiter
	ids      []string // renewbatch: the leases
	newID    string   // takeover: the new lease
	limit    int
	weight   int
	wait     bool
	ttl      time.Duration // renew; cooloff, forget (retention), learn (reset), advance: the duration
	badToken bool          // reclaim with a token the lease does not hold
	signal   bool          // adapt: a rate-limit signal; reserve: shadow
	n        int64         // reserve: tokens; adjust: delta; learn: requests remaining
	// Under a policy: the class, and a supersede key (with cancel).
	prio      string
	supersede string
	cancel    bool
	exclusive bool  // the whole limit in force at grant (Request.Exclusive)
	granted   int64 // capacity: the lease's count of local grants (capacity.Ask's Granted)
	tokens    bool  // rateshare: a share of the tokens limit (capacity.RateAsk's Tokens)
}

func (o diffOp) String() string {
	switch o.kind {
	case "acquire":
		return fmt.Sprintf("acquire %s/%s limit %d weight %d wait %v prio %q supersede %q cancel %v exclusive %v", o.resource, o.id, o.limit,
			o.weight, o.wait, o.prio, o.supersede, o.cancel, o.exclusive)
	case "takeover":
		return fmt.Sprintf("takeover %s/%s by %s", o.resource, o.id, o.newID)
	case "renew":
		return fmt.Sprintf("renew %s/%s ttl %v", o.resource, o.id, o.ttl)
	case "reclaim":
		return fmt.Sprintf("reclaim %s/%s bad token %v", o.resource, o.id, o.badToken)
	case "pause", "resume":
		return fmt.Sprintf("%s %s", o.kind, o.resource)
	case "limit":
		return fmt.Sprintf("limit %s %d", o.resource, o.limit)
	case "renewbatch":
		return fmt.Sprintf("renewbatch %s/%v", o.resource, o.ids)
	case "cooloff", "forget", "advance":
		return fmt.Sprintf("%s %s %v", o.kind, o.resource, o.ttl)
	case "adapt", "reserve", "adjust", "learn":
		return fmt.Sprintf("%s %s signal/shadow %v n %d ttl %v", o.kind, o.resource, o.signal, o.n, o.ttl)
	case "adjustsettle":
		return fmt.Sprintf("%s %s n %d settle %s %v at %d", o.kind, o.resource, o.n, o.newID, o.ids, o.limit)
	case "capacity":
		return fmt.Sprintf("capacity %s/%s limit %d want %d in use %d release %v granted %d", o.resource, o.id, o.limit, o.weight, o.n, o.wait,
			o.granted)
	case "rateshare":
		return fmt.Sprintf("rateshare %s/%s tokens %v want %d release %v another's secret %v granted %d", o.resource, o.id, o.tokens, o.n, o.wait,
			o.signal, o.granted)
	}
	return fmt.Sprintf("%s %s/%s", o.kind, o.resource, o.id)
}

// diffOps draws n steps. Ids already sent are reused by the steps that
// name a lease (and "ghost", never sent, sometimes).
func diffOps(rng *rand.Rand, n int, policy, clocked bool) []diffOp {
	// long outlasts every run without a clock; with one, an advance of
	// 11 minutes ends it, as it ends leases and queue entries (10).
	long := 30 * time.Minute
	if clocked {
		long = 6 * time.Minute
	}
	resources := []string{"r1", "r2"}
	sent := map[string][]string{}
	// A sequence draws either AIMD steps or live limits: the twins
	// differ on the two together (after a live limit is cleared, the file
	// backend enforces the AIMD limit, Redis grants under the limit
	// asked), a known difference left to the Redis backend.
	adaptive := rng.IntN(2) == 0
	var ops []diffOp
	for i := range n {
		res := resources[rng.IntN(len(resources))]
		pick := func() string {
			ids := sent[res]
			if len(ids) == 0 || rng.IntN(10) == 0 {
				return "ghost"
			}
			return ids[rng.IntN(len(ids))]
		}
		fresh := func() string {
			id := fmt.Sprintf("l%02d", i)
			sent[res] = append(sent[res], id)
			return id
		}
		if op, ok := budgetOp(rng, i, sent, clocked); ok {
			ops = append(ops, op)
			continue
		}
		if op, ok := capacityOp(rng, i, sent); ok {
			ops = append(ops, op)
			continue
		}
		op := diffOp{resource: res}
		switch k := rng.IntN(37); {
		case k < 7:
			op.kind, op.id, op.wait = "acquire", fresh(), rng.IntN(2) == 0
			op.limit, op.weight = 3, 1+rng.IntN(3)
			if rng.IntN(12) == 0 {
				op.limit = 4 // another limit: drift, or a change when idle
			}
			if rng.IntN(15) == 0 {
				op.weight = 5 // above any limit
			} else if rng.IntN(6) == 0 {
				op.exclusive, op.weight = true, op.limit // under a live or drifted limit too
			}
			if policy {
				op.prio = []string{"critical", "default", "batch", ""}[rng.IntN(4)]
				if op.prio == "batch" && op.weight < 5 {
					op.weight = 1 // its cap
				}
				if rng.IntN(3) == 0 {
					op.supersede, op.cancel = "0", rng.IntN(2) == 0 // "0": a name, not a default to leave out
				}
			}
		case k < 9:
			op.kind, op.id = "poll", pick()
		case k < 11:
			op.kind, op.id = "renew", pick()
			op.ttl = []time.Duration{0, time.Minute, 2 * time.Minute}[rng.IntN(3)]
		case k < 15:
			op.kind, op.id = "release", pick()
			if ls := sent["~budgets"]; len(ls) > 0 && rng.IntN(3) == 0 {
				// The release carries a settle (SettleRequest.Release).
				op.kind, op.newID = "releasesettle", ls[rng.IntN(len(ls))]
				op.ids, op.n = []string{"b1", "b2", "b3"}[:rng.IntN(3)], int64(rng.IntN(80))
			}
		case k < 17:
			op.kind, op.id = "cancel", pick()
		case k < 18:
			op.kind, op.id, op.badToken = "reclaim", pick(), rng.IntN(3) == 0
		case k < 20:
			op.kind, op.id = "takeover", pick()
			op.newID = fresh()
		case k < 21:
			op.kind, op.id = "withdraw", pick()
		case k < 22:
			op.kind = "pause"
		case k < 23:
			op.kind = "resume"
		case k < 24:
			op.kind, op.limit = "limit", rng.IntN(5) // 0 clears
			if adaptive {
				op.kind, op.signal = "adapt", rng.IntN(3) == 0
			}
		case k < 25:
			op.kind, op.id = "touch", pick()
		case k < 26:
			op.kind = "renewbatch"
			for range 1 + rng.IntN(3) {
				op.ids = append(op.ids, pick())
			}
		case k < 27:
			// Each cool-off ends a second per step later or earlier than
			// one drawn before: never in the same millisecond (the file
			// backend's clock is finer than Redis's).
			op.kind, op.ttl = "cooloff", []time.Duration{2 * time.Minute, long}[rng.IntN(2)]
			if !clocked {
				op.ttl = long
			}
			op.ttl += time.Duration(i) * time.Second * time.Duration(1-2*rng.IntN(2))
		case k < 29:
			op.kind, op.limit = "limit", rng.IntN(5)
			if adaptive {
				op.kind, op.signal = "adapt", rng.IntN(3) == 0
			}
		case k < 30:
			op.kind, op.ttl = "forget", 0
			if clocked && rng.IntN(2) == 0 {
				op.ttl = 5 * time.Minute
			}
		case k < 32:
			op.kind, op.n, op.signal = "reserve", int64(rng.IntN(60)), rng.IntN(4) == 0
		case k < 33:
			op.kind, op.n = "adjust", int64(rng.IntN(41)-20)
			if ls := sent["~budgets"]; len(ls) > 0 && rng.IntN(2) == 0 {
				// The adjustment rides on a settle (SettleRequest.Adjust) of
				// an actual of limit.
				op.kind, op.newID = "adjustsettle", ls[rng.IntN(len(ls))]
				op.ids, op.limit = []string{"b1", "b2", "b3"}[:rng.IntN(3)], rng.IntN(80)
			}
		case k < 34:
			op.kind, op.n, op.ttl = "learn", int64(rng.IntN(4)), long
		case k < 35:
			op.kind, op.id = []string{"lost", "seq", "observe"}[rng.IntN(3)], pick()
		case k < 36:
			op.kind = "degraded"
			if rng.IntN(2) == 0 {
				op.kind, op.id = "watchdog", pick()
			}
		default:
			if !clocked {
				op.kind, op.id = "poll", pick()
				break
			}
			op.kind, op.ttl = "advance", []time.Duration{4 * time.Minute, 11 * time.Minute}[rng.IntN(2)]
		}
		ops = append(ops, op)
	}
	return ops
}

// diffRun is one store's run of a sequence: the log of what it answered,
// in a form that is the same on every store that behaves alike.
type diffRun struct {
	store   string
	b       full
	project string
	// tokens: each granted lease's token on this store; last: the
	// highest token given per resource.
	tokens map[string]int64
	last   map[string]int64
	log    []string
	// broken: a relation this store broke on its own (tokens).
	broken string
	// policy: the queue policy every acquire asks for, or nil.
	policy *governor.Policy
	// advance, when set, moves the store's clock.
	advance func(d time.Duration)
	// shares: each rate share's last answer (rateShareStep).
	shares map[string]capacity.RateShare
}

// The rate limits of the reserve, adjust and learn steps: slow enough
// that real time refills nothing during a run.
var (
	diffRequests = governor.RateLimit{Rate: 5, Period: time.Hour}
	diffTokens   = governor.RateLimit{Rate: 100, Period: time.Hour}
)

func (r *diffRun) key(res string) governor.Key {
	return governor.Key{Project: r.project, Resource: res}
}

func (r *diffRun) request(o diffOp, id string, isNew bool) governor.Request {
	mode := governor.Fail
	if o.wait {
		mode = governor.Wait
	}
	req := governor.Request{Key: r.key(o.resource), ID: id, Limit: o.limit, Weight: o.weight, Exclusive: o.exclusive, TTL: 10 * time.Minute,
		Mode: mode, QueueTTL: 10 * time.Minute, New: isNew,
		Declaration: governor.Declaration{Session: "diff", Host: "h"}}
	if r.policy != nil {
		req.Policy, req.Priority, req.Supersede, req.CancelInProgress = r.policy.Encode(), o.prio, o.supersede, o.cancel
	}
	return req
}

// left renders the cells left in a rate limit (-1: no limit): exact
// on moved clocks; on real time only that there is a limit. There the
// stores run one after another, and each store's buckets refill by the
// time that passed between its own steps: a limit narrowed by a share
// leaves a fraction of a cell that a second can carry over a whole one
// (42 tokens left on the file backend, 43 on miniredis, in a CI run at
// load 30). TestDifferentialClock compares them exactly.
func (r *diffRun) left(n int64) string {
	if r.advance != nil || n < 0 {
		return strconv.FormatInt(n, 10)
	}
	return "some"
}

// granted records a grant's token. A grant made by this very call (not
// one handed to a waiter earlier and claimed now) must be above every
// token seen before on the resource. (A poll may also be a new grant: an
// id that is neither queued nor held is queued or granted again.)
func (r *diffRun) granted(res, id string, tok int64, now bool) {
	if now && tok <= r.last[res] && r.broken == "" {
		r.broken = fmt.Sprintf("lease %s of %s got token %d, not above %d given before", id, res, tok, r.last[res])
	}
	r.last[res] = max(r.last[res], tok)
	r.tokens[res+"/"+id] = tok
}

func (r *diffRun) do(o diffOp) {
	if r.advance != nil {
		// Every step at its own instant: a token granted at one step is
		// below the clock at the next, on every store.
		r.advance(time.Millisecond)
	}
	out := r.step(o)
	ctx := context.Background()
	key := r.key(o.resource)
	st, err := r.b.Status(ctx, key)
	if err != nil {
		out += " status " + errClass(err)
	} else {
		out += " | " + summary(st, false)
	}
	evs, err := r.b.Events(ctx, key, time.Time{})
	if err != nil {
		out += " events " + errClass(err)
	}
	var kinds []string
	run := 0 // where the run of expiries at one instant began
	for i, e := range evs {
		kinds = append(kinds, e.Kind+":"+e.LeaseID+":"+e.By)
		// Leases that expire at one instant are recorded in any order.
		if i == 0 || e.Kind != eventkind.Expired || evs[i-1].Kind != e.Kind || !e.At.Equal(evs[i-1].At) {
			run = i
		}
		slices.Sort(kinds[run:])
	}
	r.log = append(r.log, out+" | events "+strings.Join(kinds, " ")+" | by token "+r.byToken())
}

// more is step for the operations beyond the lease's own.
func (r *diffRun) more(ctx context.Context, key governor.Key, o diffOp) string {
	switch o.kind {
	case "touch":
		_, err := r.b.Renew(ctx, governor.Renewal{Key: key, ID: o.id, Secret: "", Token: 0, Touch: true}) // token 0: see "renew"
		return errClass(err)
	case "renewbatch":
		var errs []string
		for _, res := range renewBatch(ctx, r.b, key, o.ids) {
			errs = append(errs, errClass(res.Err))
		}
		return strings.Join(errs, " ")
	case "cooloff":
		_, err := until(r.b.Admin(ctx, key, governor.Action{Kind: eventkind.CoolOff, For: o.ttl, Detail: "diff"}))
		return errClass(err)
	case "adapt":
		a, err := r.b.Adapt(ctx, key, governor.AdaptRequest{Max: 3, Min: 1, IncreaseEvery: 2, Signal: o.signal})
		return fmt.Sprintf("%s %+v", errClass(err), a)
	case "forget":
		// A resource without a grant or a queue entry since it was last
		// forgotten (or ever) may be stored or not: Redis stores
		// bookkeeping (and the idle mark of a first Forget) for any
		// resource a call settled, the file backend only what a call
		// wrote (an event, a limit), so the first Forget of such a
		// resource may mark it on one and remove it on the other (a known
		// twin difference). Such a resource is forgotten until gone
		// (twice at most), and the state left is compared.
		was, _ := r.b.Status(ctx, key)
		if was.Counters.Acquired == 0 && was.Counters.Waited == 0 {
			var err error
			for i, gone := 0, false; i < 2 && !gone && err == nil; i++ {
				gone, err = r.b.Forget(ctx, key, 0)
			}
			return errClass(err) + " (nothing granted)"
		}
		gone, err := r.b.Forget(ctx, key, o.ttl)
		return fmt.Sprintf("%s %v", errClass(err), gone)
	case "reserve":
		rr := governor.RateRequest{Key: key, Requests: diffRequests, Tokens: diffTokens, NRequests: 1, NTokens: o.n, Shadow: o.signal}
		res, err := r.b.RateReserve(ctx, rr)
		rs, serr := r.b.RateStatus(ctx, key)
		return fmt.Sprintf("%s allowed %v shadow %v retry %v cooling %v remaining %s %s | status %s %d %d %d remaining %s %s",
			errClass(err), res.Allowed, res.ShadowDenied, res.RetryAfter > 0, !res.CoolOff.IsZero(), r.left(res.RemainingRequests),
			r.left(res.RemainingTokens), errClass(serr), rs.Allowed, rs.Limited, rs.ShadowDenied, r.left(rs.RemainingRequests), r.left(rs.RemainingTokens))
	case "adjust":
		return errClass(r.b.RateAdjust(ctx, governor.RateAdjustment{Key: key, Tokens: diffTokens, Delta: o.n}))
	case "adjustsettle":
		var actual []governor.BudgetAmount
		for _, n := range o.ids {
			actual = append(actual, governor.BudgetAmount{Name: n, Amount: int64(o.limit)})
		}
		st, serr := r.b.BudgetSettle(ctx, governor.SettleRequest{Project: r.project, Lease: o.newID, Secret: "s-" + o.newID, Actual: actual,
			By: "diff", Adjust: &governor.RateAdjustment{Key: key, Tokens: diffTokens, Delta: o.n}})
		rs, err := r.b.RateStatus(ctx, key)
		return fmt.Sprintf("%s settle %s settled %v overruns %v | status %s remaining %s %s | %s", errClass(st.AdjustErr), errClass(serr), st.Settled,
			st.Overruns, errClass(err), r.left(rs.RemainingRequests), r.left(rs.RemainingTokens), r.budgetStep(ctx, diffOp{kind: "bread"}))
	case "learn":
		lb := governor.LearnedBudget{RemainingRequests: o.n, ResetRequests: o.ttl, RemainingTokens: -1}
		return errClass(r.b.RateAdjust(ctx, governor.RateAdjustment{Key: key, Learned: &[]governor.LearnedBudget{lb}[0]}))
	case "lost":
		return errClass(r.b.Record(ctx, key, governor.Event{Kind: eventkind.Lost, LeaseID: o.id, Token: r.tokens[o.resource+"/"+o.id], Detail: "diff"}))
	case "seq":
		n, err := r.b.NextSeq(ctx, r.project, o.resource, r.tokens[o.resource+"/"+o.id])
		return fmt.Sprintf("%s %d", errClass(err), n)
	case "observe":
		return errClass(r.b.Observe(ctx, key, "wait", []int64{1, 0, 2}, 3*time.Millisecond))
	case "degraded":
		return errClass(r.b.Record(ctx, key, governor.Event{Kind: eventkind.Degraded, Detail: "diff"}))
	case "watchdog":
		return errClass(r.b.Record(ctx, key, governor.Event{Kind: eventkind.WatchdogKill, LeaseID: o.id, Token: r.tokens[o.resource+"/"+o.id], Detail: "diff"}))
	case "advance":
		r.advance(o.ttl)
		return "ok"
	case "breserve", "ratebudget", "bsettle", "brenew", "badmin":
		return r.budgetStep(ctx, o)
	case "capacity":
		return r.capacityStep(ctx, o)
	case "rateshare":
		return r.rateShareStep(ctx, o)
	}
	panic("differential: no step " + o.kind)
}

// renewBatch renews ids of key in one batch where the backend has one,
// else one by one, as a Governor's heartbeats do: the two must agree.
func renewBatch(ctx context.Context, b governor.Backend, key governor.Key, ids []string) []governor.RenewalResult {
	if br, ok := b.(governor.BatchRenewer); ok {
		rs := make([]governor.Renewal, len(ids))
		for i, id := range ids {
			rs[i] = governor.Renewal{Key: key, ID: id}
		}
		return br.RenewBatch(ctx, rs)
	}
	out := make([]governor.RenewalResult, len(ids))
	for i, id := range ids {
		out[i].Expires, out[i].Err = b.Renew(ctx, governor.Renewal{Key: key, ID: id, Secret: "", Token: 0, TTL: 0})
	}
	return out
}

// step runs o and says what the store answered.
func (r *diffRun) step(o diffOp) string {
	ctx := context.Background()
	key := r.key(o.resource)
	var out string
	switch o.kind {
	case "acquire", "poll":
		req := r.request(o, o.id, o.kind == "acquire")
		if o.kind == "poll" {
			// Re-sent as the waiter it may be; weight and limit do not
			// matter to a waiter already queued or granted.
			req.Limit, req.Weight, req.Mode = 3, 1, governor.Wait
		}
		res, err := r.b.Acquire(ctx, req)
		if err == nil && res.Outcome == governor.Granted {
			r.granted(o.resource, o.id, res.Token, o.kind == "acquire")
		}
		out = fmt.Sprintf("%s %v position %d", errClass(err), res.Outcome, res.Position)
		if err == nil && res.Outcome != governor.Granted {
			out += " " + summary(res.Status, true)
		}
	case "renew":
		// Token 0: with the lease's token, Redis takes the renewal of a
		// lease gone from a resource forgotten since for evidence of
		// lost data (a quarantine), which the file backend has no notion
		// of (see LostDataRenewByHandle).
		_, err := r.b.Renew(ctx, governor.Renewal{Key: key, ID: o.id, Secret: "", Token: 0, TTL: o.ttl})
		out = errClass(err)
	case "release":
		out = errClass(r.b.Release(ctx, key, o.id, ""))
	case "releasesettle":
		var actual []governor.BudgetAmount
		for _, n := range o.ids {
			actual = append(actual, governor.BudgetAmount{Name: n, Amount: o.n})
		}
		st, serr := r.b.BudgetSettle(ctx, governor.SettleRequest{Project: r.project, Lease: o.newID, Secret: "s-" + o.newID, Actual: actual,
			By: "diff", Release: &governor.Handle{Resource: key.Resource, ID: o.id}})
		out = fmt.Sprintf("%s settle %s settled %v overruns %v", errClass(st.ReleaseErr), errClass(serr), st.Settled, st.Overruns)
	case "cancel":
		out = errClass(r.b.Cancel(ctx, key, o.id, ""))
	case "reclaim":
		tok := r.tokens[o.resource+"/"+o.id]
		if o.badToken {
			tok++
		}
		ok, err := actChanged(r.b.Admin(ctx, key, governor.Action{Kind: eventkind.Reclaimed, IDs: []string{o.id}, Token: tok}))
		out = fmt.Sprintf("%s %v", errClass(err), ok)
	case "takeover":
		req := r.request(diffOp{resource: o.resource, limit: 3, weight: 1}, o.newID, true)
		res, err := r.b.Acquire(ctx, takeover(req, key, o.id))
		// An expired lease is taken over only while its slot is free:
		// else Refused, and nothing granted.
		if err == nil && res.Outcome == governor.Granted {
			if old := r.tokens[o.resource+"/"+o.id]; res.Token <= old && r.broken == "" {
				r.broken = fmt.Sprintf("takeover token %d not above the old lease's %d", res.Token, old)
			}
			r.granted(o.resource, o.newID, res.Token, true)
		}
		out = fmt.Sprintf("%s %v", errClass(err), res.Outcome)
	case "withdraw":
		gone, err := withdrawn(r.b.Admin(ctx, key, withdrawal(governor.Action{Kind: eventkind.Cancelled, By: "diff", Detail: "d"}, []string{o.id})))
		out = fmt.Sprintf("%s %v", errClass(err), gone)
	case "pause", "resume":
		changed, err := actChanged(r.b.Admin(ctx, key, governor.Action{Kind: pauseKind(o.kind == "pause"), By: "diff"}))
		out = fmt.Sprintf("%s %v", errClass(err), changed)
	case "limit":
		out = errClass(actionErr(r.b.Admin(ctx, key, governor.Action{Kind: eventkind.Limit, Limit: o.limit, By: "diff"})))
	default:
		out = r.more(ctx, key, o)
	}
	return out
}

// byToken lists the leases seen granted in the order of their tokens:
// tokens differ between stores, their order must not.
func (r *diffRun) byToken() string {
	ids := make([]string, 0, len(r.tokens))
	for id := range r.tokens {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return r.tokens[ids[i]] < r.tokens[ids[j]] })
	return strings.Join(ids, " ")
}

// summary is what two stores must agree on in a status: holders by id
// (expiry order depends on clock resolution), waiters in queue order.
// A refusal's status lists the queue by length only.
func summary(st governor.Status, refusal bool) string {
	var hs []string
	for _, h := range st.Holders {
		hs = append(hs, fmt.Sprintf("%s:%d", h.LeaseID, h.Weight))
	}
	sort.Strings(hs)
	var ws []string
	if refusal {
		for range st.QueueLen() { // a reply may list it or count it (Status.Queued)
			ws = append(ws, "?")
		}
	} else {
		for _, w := range st.Waiters {
			ws = append(ws, fmt.Sprintf("%s:%d", w.ID, w.Weight))
		}
	}
	s := fmt.Sprintf("limit %d used %d drift %d holders [%s] waiters [%s]", st.Limit, st.Used, st.DriftLimit,
		strings.Join(hs, " "), strings.Join(ws, " "))
	if !refusal {
		s += fmt.Sprintf(" counters %+v holds %d", st.Counters, len(st.Holds))
		if st.Paused != nil {
			s += " paused by " + st.Paused.By
		}
		if st.LiveLimit != nil {
			s += fmt.Sprintf(" live %d by %s", st.LiveLimit.Limit, st.LiveLimit.By)
		}
	}
	return s
}

// errClass names an error by the sentinel it matches.
func errClass(err error) string {
	if err == nil {
		return "ok"
	}
	var lost *governor.LeaseLostError
	if errors.As(err, &lost) {
		return "lost(" + lost.End.Kind + ")"
	}
	var gone *governor.WithdrawnError
	if errors.As(err, &gone) {
		return "withdrawn(" + gone.Kind + " by " + gone.By + ")"
	}
	for _, c := range []struct {
		name string
		err  error
	}{
		{"busy", governor.ErrBusy}, {"lost", governor.ErrLeaseLost}, {"not-held", governor.ErrNotHeld},
		{"invalid", governor.ErrInvalid}, {"too-heavy", governor.ErrTooHeavy}, {"closed", governor.ErrClosed},
		{"backend", governor.ErrBackend}, {"queue-full", governor.ErrQueueFull}, {"superseded", governor.ErrSuperseded},
		{"withdrawn", governor.ErrWithdrawn}, {"stale-token", governor.ErrStaleToken},
	} {
		if errors.Is(err, c.err) {
			return c.name
		}
	}
	return "other: " + err.Error()
}
