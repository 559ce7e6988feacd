package redisbackend

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/redistest"
	scripts "github.com/governor-dev/governor/scripts-lua"
)

// The twin tests: acquire, renew and release each have a fast path that
// repeats, for speed, what lib.lua's helpers write. These tests run the
// same operations once with the fast paths and once without
// (scripts.AcquireSlow and the others) and prove that both leave the
// same keys with the same values and answer the same.

// slowScripts swaps the scripts for their slow twins until the returned
// function is called. The tests of this package do not run in parallel.
func slowScripts() (restore func()) {
	a, r, l := acquireScript, renewScript, releaseScript
	acquireScript = newScript(scripts.AcquireSlow)
	renewScript = newScript(scripts.RenewSlow)
	releaseScript = newScript(scripts.ReleaseSlow)
	return func() { acquireScript, renewScript, releaseScript = a, r, l }
}

// twin is one side of a twin test: a backend and how to read its keys.
type twin struct {
	b    *Backend
	rdb  *redis.Client
	key  governor.Key
	slow bool
	// mask replaces what differs between runs that are not on one
	// clock (real Redis): every time and token.
	mask bool
	// shift moves the server's clock (miniredis), if it can be set.
	shift func(d time.Duration)
}

func newTwin(t *testing.T, addr string, key governor.Key, slow, mask bool) *twin {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	b, err := New(context.Background(), rdb)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = b.Close()
		_ = rdb.Close()
	})
	return &twin{b: b, rdb: rdb, key: key, slow: slow, mask: mask}
}

// do runs op with this twin's scripts and returns what it answered, as
// text to compare.
func (tw *twin) do(op func(b *Backend) string) string {
	if tw.slow {
		defer slowScripts()()
	}
	return op(tw.b)
}

var (
	bigNumber = regexp.MustCompile(`\d{12,}`)
	streamID  = regexp.MustCompile(`^\d+-\d+$`)
)

// dump lists every key of the resource with its value, sorted, with the
// backend's own notification channel (random) replaced by CHANNEL.
func (tw *twin) dump(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	names := []string{"holders", "state", "queue", "queue-exp", "queue-rec", "events"}
	var lines []string
	for i, k := range Keys(tw.key) {
		typ, err := tw.rdb.Type(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		switch typ {
		case "none":
		case "zset":
			zs, err := tw.rdb.ZRangeWithScores(ctx, k, 0, -1).Result()
			if err != nil {
				t.Fatal(err)
			}
			for _, z := range zs {
				lines = append(lines, fmt.Sprintf("%s %v=%.0f", names[i], z.Member, z.Score))
			}
		case "hash":
			h, err := tw.rdb.HGetAll(ctx, k).Result()
			if err != nil {
				t.Fatal(err)
			}
			for f, v := range h {
				if strings.HasPrefix(f, "hold:") && tw.mask {
					v = "D" // a duration on real time
				}
				lines = append(lines, fmt.Sprintf("%s %s=%s", names[i], f, v))
			}
		case "stream":
			xs, err := tw.rdb.XRange(ctx, k, "-", "+").Result()
			if err != nil {
				t.Fatal(err)
			}
			for n, x := range xs {
				if !streamID.MatchString(x.ID) {
					t.Fatalf("event id %q", x.ID)
				}
				lines = append(lines, fmt.Sprintf("%s #%d kind=%v lease=%v token=%v detail=%v at=%v", names[i], n,
					x.Values["kind"], x.Values["lease"], x.Values["token"], x.Values["detail"], x.Values["at"]))
			}
		default:
			t.Fatalf("key %s is a %s", k, typ)
		}
	}
	sort.Strings(lines)
	s := strings.ReplaceAll(strings.Join(lines, "\n"), tw.b.channel, "CHANNEL")
	if tw.mask {
		s = bigNumber.ReplaceAllString(s, "T")
	}
	return s
}

// twinOp is one step of a twin run, the same on both twins: a backend
// call, or (shift) a move of both clocks, which a twin without a
// settable clock skips.
type twinOp struct {
	name  string
	run   func(b *Backend, key governor.Key) string
	shift time.Duration
}

func shiftOp(d time.Duration) twinOp { return twinOp{name: fmt.Sprint("clock ", d), shift: d} }

// owned returns the lease id and secret of a twin lease named name:
// each is proven by its secret, as a Governor's leases are.
func owned(name string) (id, secret string) {
	sum := sha256.Sum256([]byte(name))
	secret = hex.EncodeToString(sum[:governor.SecretLen/2])
	return governor.LeaseIDOf(secret), secret
}

// forged is the secret a forger gives: none.
const forged = ""

func acquireOp(name string, limit, weight int, ttl time.Duration, mode governor.Mode, isNew bool) twinOp {
	id, secret := owned(name)
	return twinOp{name: fmt.Sprintf("acquire %s limit %d weight %d ttl %v mode %d new %v", name, limit, weight, ttl, mode, isNew),
		run: func(b *Backend, key governor.Key) string {
			res, err := b.Acquire(context.Background(), governor.Request{Key: key, ID: id, Secret: secret, Limit: limit, Weight: weight,
				TTL: ttl, Mode: mode, QueueTTL: time.Minute, New: isNew,
				Declaration: governor.Declaration{Session: "twin", Host: "h", PID: 7}})
			return fmt.Sprintf("%v token %d expires %d position %d used %d limit %d holders %d waiters %d err %v",
				res.Outcome, res.Token, res.Expires.UnixMilli(), res.Position, res.Status.Used, res.Status.Limit,
				len(res.Status.Holders), res.Status.QueueLen(), err)
		}}
}

func renewOp(name string, ttl time.Duration) twinOp {
	id, secret := owned(name)
	return renewWith(name, id, secret, ttl)
}

func renewWith(name, id, secret string, ttl time.Duration) twinOp {
	return twinOp{name: fmt.Sprintf("renew %s (secret %q) ttl %v", name, secret, ttl), run: func(b *Backend, key governor.Key) string {
		exp, err := b.Renew(context.Background(), governor.Renewal{Key: key, ID: id, Secret: secret, Token: 0, TTL: ttl})
		return fmt.Sprintf("expires %d err %v", exp.UnixMilli(), keyless(err))
	}}
}

func releaseOp(name string) twinOp {
	id, secret := owned(name)
	return releaseWith(name, id, secret)
}

func releaseWith(name, id, secret string) twinOp {
	return twinOp{name: fmt.Sprintf("release %s (secret %q)", name, secret), run: func(b *Backend, key governor.Key) string {
		return fmt.Sprint(keyless(b.Release(context.Background(), key, id, secret)))
	}}
}

func cancelOp(name string) twinOp {
	id, secret := owned(name)
	return cancelWith(name, id, secret)
}

func cancelWith(name, id, secret string) twinOp {
	return twinOp{name: fmt.Sprintf("cancel %s (secret %q)", name, secret), run: func(b *Backend, key governor.Key) string {
		return fmt.Sprint(keyless(b.Cancel(context.Background(), key, id, secret)))
	}}
}

// keyless is err without the twin's key, which differs between the
// twins on one server.
func keyless(err error) any {
	if errors.Is(err, governor.ErrNotOwner) {
		return governor.ErrNotOwner
	}
	return err
}

// forgedOps are renew, release and cancel of lease name by its public id
// alone: refused alike, changing nothing, on both paths.
func forgedOps(name string) []twinOp {
	id, _ := owned(name)
	return []twinOp{renewWith(name, id, forged, time.Hour), releaseWith(name, id, forged), cancelWith(name, id, forged)}
}

// damageOp writes a contradiction into the resource's keys: field f of
// key i (Keys order) set to v, or, with f empty, key i deleted.
func damageOp(i int, f, v string) twinOp {
	return twinOp{name: fmt.Sprintf("damage key %d field %q = %q", i, f, v), run: func(b *Backend, key governor.Key) string {
		k := Keys(key)[i]
		if f == "" {
			return fmt.Sprint(b.rdb.Del(context.Background(), k).Err())
		}
		return fmt.Sprint(b.rdb.HSet(context.Background(), k, f, v).Err())
	}}
}

// runTwins runs ops on fast and slow, comparing answers and keys after
// every step; between steps, advance (if set) moves both clocks alike.
func runTwins(t *testing.T, fast, slow *twin, ops []twinOp, advance func(i int)) {
	t.Helper()
	for i, op := range ops {
		if op.run == nil {
			if fast.shift != nil {
				fast.shift(op.shift)
				slow.shift(op.shift)
			}
			continue
		}
		fa := fast.do(func(b *Backend) string { return op.run(b, fast.key) })
		sa := slow.do(func(b *Backend) string { return op.run(b, slow.key) })
		if fast.mask {
			fa, sa = bigNumber.ReplaceAllString(fa, "T"), bigNumber.ReplaceAllString(sa, "T")
		}
		if fa != sa {
			t.Fatalf("step %d, %s: the fast path answered %q, the slow one %q", i, op.name, fa, sa)
		}
		if fd, sd := fast.dump(t), slow.dump(t); fd != sd {
			t.Fatalf("step %d, %s: the fast and slow paths left different state:\nfast:\n%s\nslow:\n%s", i, op.name, fd, sd)
		}
		if advance != nil {
			advance(i)
		}
	}
}

// twinScenario walks each fast path and its edges: a grant that lowers
// minexp or does not, renewals with ttl 0, the same and another ttl,
// releases of the last and not the last holder, and the cases where the
// fast path must step aside (first acquire, unknown ids, a full
// resource, a queue).
func twinScenario() []twinOp {
	const m = time.Minute
	return []twinOp{
		acquireOp("a", 3, 1, m, governor.Fail, true), // first: sets the limit (slow both ways)
		acquireOp("b", 3, 1, 2*m, governor.Fail, true),
		acquireOp("c", 3, 1, 30*time.Second, governor.Fail, true), // lowers minexp
		renewOp("a", 0),
		renewOp("a", m),
		renewOp("c", 10*time.Second), // another ttl: rewrites the record
		renewOp("c", 0),
		renewOp("nobody", m),
		forgedOps("b")[0], forgedOps("b")[1], forgedOps("b")[2], // the public id alone: refused
		releaseOp("b"),
		releaseOp("b"), // not held
		acquireOp("d", 3, 2, m, governor.Fail, true),  // no room: refused
		acquireOp("e", 3, 1, m, governor.Fail, false), // not new: never fast
		acquireOp("w", 3, 2, m, governor.Wait, true),  // queued
		releaseOp("a"), // a queue: slow both ways
		releaseOp("c"), // hands the weight to w
		acquireOp("w", 3, 2, 2*m, governor.Wait, false),
		renewOp("w", 0),
		cancelOp("e"),
		releaseOp("w"),
		acquireOp("f", 3, 3, m, governor.Fail, true), // the whole limit
		acquireOp("g", 4, 1, m, governor.Fail, true), // another limit: drift
		releaseOp("f"),
		acquireOp("g", 4, 1, m, governor.Fail, true), // idle: the limit changes

		// At the very instant of an expiry, the lease is gone: a
		// release is refused and records the expiry.
		acquireOp("x", 4, 1, 10*time.Second, governor.Fail, true),
		shiftOp(10 * time.Second),
		releaseOp("x"),
		// A clock gone back (a failover to a server behind): a renewal
		// lowers minexp.
		acquireOp("y", 4, 1, 10*time.Second, governor.Fail, true),
		shiftOp(-5 * time.Second),
		renewOp("y", 0),
		releaseOp("y"),
		releaseOp("g"),
		// A waiter whose queue entry expired is dropped by a renewal or
		// a release of another lease, though no holder expired.
		acquireOp("z", 4, 2, 5*m, governor.Fail, true),
		shiftOp(15 * time.Second), // past the stale minexp: the next call resets it
		acquireOp("v", 4, 3, m, governor.Wait, true),
		shiftOp(2 * m),
		renewOp("z", 0),
		acquireOp("u", 4, 3, m, governor.Wait, true),
		shiftOp(2 * m),
		releaseOp("z"),

		// State that contradicts itself: used below zero makes the fast
		// path step aside and the slow one count the holders again.
		releaseOp("v"),
		cancelOp("u"),
		acquireOp("h1", 2, 1, m, governor.Fail, true),
		acquireOp("h2", 2, 1, m, governor.Fail, true),
		damageOp(1, "used", "-5"),
		acquireOp("n1", 2, 1, m, governor.Fail, true),
		renewOp("h1", 0),
		releaseOp("h2"),
		// A holder's record left without its entry in the holders: its
		// renewal is refused (not a fast ZADD XX that changes nothing),
		// the record goes.
		damageOp(1, "used", "abc"),
		damageOp(0, "", ""),
		renewOp("h1", 0),
		acquireOp("n2", 2, 1, m, governor.Fail, true),
		// An unreadable queue entry at the head is dropped on release.
		acquireOp("n3", 2, 1, m, governor.Fail, true),
		acquireOp("q1", 2, 1, m, governor.Wait, true),
		acquireOp("q2", 2, 1, m, governor.Wait, true),
		damageOp(4, "q1", "garbage"),
		releaseOp("n2"),
		acquireOp("q2", 2, 1, m, governor.Wait, false),

		// Lost data: a holder renewing into a resource without state
		// holds grants back (the fast path steps aside while the mark
		// is there) until the longest TTL asked for (5m, z's) has
		// passed.
		acquireOp("k1", 1, 1, m, governor.Wait, true),
		damageOp(0, "", ""), damageOp(1, "", ""), damageOp(2, "", ""),
		damageOp(3, "", ""), damageOp(4, "", ""), damageOp(5, "", ""),
		renewOp("q2", 0),
		acquireOp("k2", 1, 1, m, governor.Fail, true),
		acquireOp("k1", 1, 1, m, governor.Wait, false),
		shiftOp(3 * m),
		acquireOp("k3", 1, 1, m, governor.Fail, true),
		acquireOp("k4", 1, 1, m, governor.Fail, true),
		shiftOp(3 * m),
		acquireOp("k5", 1, 1, m, governor.Fail, true),
		acquireOp("k1", 1, 1, m, governor.Wait, false),
		releaseOp("k1"),
		acquireOp("k6", 1, 1, m, governor.Fail, true),
		releaseOp("k6"),
		acquireOp("k7", 1, 1, m, governor.Fail, true),
	}
}

// twinRandom is a random sequence on one resource. An acquire is new
// (fast path allowed) only with an id never sent before, as the contract
// says; other steps pick among the ids sent, and sometimes an unknown one.
func twinRandom(rng *rand.Rand, n int) []twinOp {
	ids := []string{"unknown"}
	ttls := []time.Duration{0, 10 * time.Second, 30 * time.Second, time.Minute}
	var ops []twinOp
	for i := range n {
		id := ids[rng.IntN(len(ids))]
		ttl := ttls[1+rng.IntN(len(ttls)-1)]
		switch rng.IntN(7) {
		case 0, 1:
			mode := governor.Fail
			if rng.IntN(3) == 0 {
				mode = governor.Wait
			}
			limit := 3
			if rng.IntN(10) == 0 {
				limit = 4
			}
			isNew := rng.IntN(4) != 0
			if isNew {
				id = fmt.Sprintf("l%d", i)
				ids = append(ids, id)
			}
			ops = append(ops, acquireOp(id, limit, 1+rng.IntN(2), ttl, mode, isNew))
		case 2:
			ops = append(ops, renewOp(id, ttls[rng.IntN(len(ttls))]))
		case 3, 4:
			ops = append(ops, releaseOp(id))
		case 5:
			ops = append(ops, cancelOp(id))
		case 6:
			f := forgedOps(id)
			ops = append(ops, f[rng.IntN(len(f))])
		}
	}
	return ops
}

// TestTwinsMiniredis: on two miniredis servers whose clocks move alike,
// the fast and slow paths leave byte-identical state, times and tokens
// included.
func TestTwinsMiniredis(t *testing.T) {
	// Not parallel: slowScripts swaps the package's scripts (a race with
	// any test running beside it).
	start := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	open := func(slow bool) *twin {
		m := miniredis.RunT(t)
		m.SetTime(start)
		tw := newTwin(t, m.Addr(), governor.Key{Project: "p", Resource: "r"}, slow, false)
		now := start
		tw.shift = func(d time.Duration) {
			now = now.Add(d)
			m.SetTime(now)
		}
		return tw
	}
	t.Run("scenario", func(t *testing.T) {
		fast, slow := open(false), open(true)
		// The clock moves only as the scenario says, so tokens come from
		// the last one, not from the clock (FLOOR).
		runTwins(t, fast, slow, twinScenario(), nil)
	})
	seed := time.Now().UnixNano()
	t.Run("random", func(t *testing.T) {
		for round := range 10 {
			s := seed + int64(round)
			rng := rand.New(rand.NewPCG(uint64(s), 0))
			fast, slow := open(false), open(true)
			t.Run(fmt.Sprint("seed ", s), func(t *testing.T) {
				runTwins(t, fast, slow, twinRandom(rng, 80), func(int) {
					// Often still (tokens then come from the last one, not
					// the clock), sometimes far enough for leases and
					// waiters to expire, and sometimes back, as after a
					// failover to a server whose clock is behind.
					var d time.Duration
					switch rng.IntN(7) {
					case 0, 1:
					case 2:
						d = -time.Duration(rng.Int64N(int64(3 * time.Second)))
					default:
						d = time.Duration(rng.Int64N(int64(20 * time.Second)))
					}
					fast.shift(d)
					slow.shift(d)
				})
			})
		}
	})
}

// TestTwinsRealRedis: the same on a real server, which runs Lua 5.1 as
// production does. Its clock cannot be set, so times and tokens are
// masked; the scenario never waits for an expiry.
func TestTwinsRealRedis(t *testing.T) {
	s := redistest.Start(t)
	fast := newTwin(t, s.Addr, governor.Key{Project: "p", Resource: "fast"}, false, true)
	slow := newTwin(t, s.Addr, governor.Key{Project: "p", Resource: "slow"}, true, true)
	runTwins(t, fast, slow, twinScenario(), nil)
}
