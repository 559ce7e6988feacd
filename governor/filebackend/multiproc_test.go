package filebackend_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/filebackend"
)

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

var reqSeq struct {
	sync.Mutex
	n int
}

// req builds a backend request with a fresh id.
func req(key governor.Key, limit, weight int, mode governor.Mode) governor.Request {
	reqSeq.Lock()
	reqSeq.n++
	id := fmt.Sprintf("r%d-%d", os.Getpid(), reqSeq.n)
	reqSeq.Unlock()
	return governor.Request{Key: key, ID: id, Limit: limit, Weight: weight, TTL: time.Minute,
		Mode: mode, QueueTTL: time.Minute, Declaration: governor.Declaration{Session: "test"}}
}

func mustAcquire(t testing.TB, b governor.Backend, r governor.Request, want governor.Outcome) governor.Result {
	t.Helper()
	res, err := b.Acquire(ctxT(t), r)
	if err != nil {
		t.Fatalf("Acquire(%s weight %d): %v", r.Key, r.Weight, err)
	}
	if res.Outcome != want {
		t.Fatalf("Acquire(%s weight %d) = %v, want %v (status %+v)", r.Key, r.Weight, res.Outcome, want, res.Status)
	}
	return res
}

func mustStatus(t testing.TB, b governor.Backend, key governor.Key) governor.Status {
	t.Helper()
	st, err := b.Status(ctxT(t), key)
	if err != nil {
		t.Fatalf("Status(%s): %v", key, err)
	}
	return st
}

// TestMultiProcessNeverOverLimit: 4 OS processes of 16 goroutines each
// wait for a limit-2 resource; their holding intervals, taken on the
// machine's monotonic clock inside the grant, never overlap more than 2
// deep, and every worker is served.
func TestMultiProcessNeverOverLimit(t *testing.T) {
	t.Parallel()
	multiProcessRace(t, false)
}

// TestMultiProcessPolicyInvariants: the same under a queue policy
// (raceLimitPolicy, limit 3): never over the limit, batch never over its
// cap, default and batch never in critical's reserve, no fair key over
// fair_cap.
func TestMultiProcessPolicyInvariants(t *testing.T) {
	t.Parallel()
	multiProcessRace(t, true)
}

func multiProcessRace(t *testing.T, policy bool) {
	const procs, workers, rounds = 4, 16, 3
	limit, pol := 2, "0"
	if policy {
		limit, pol = 3, "1"
	}
	dir := t.TempDir()
	key := governor.Key{Project: "race", Resource: "provider:anthropic"}
	var hs []*helper
	for i := 0; i < procs; i++ {
		out := filepath.Join(dir, fmt.Sprintf("intervals-%d", i))
		hs = append(hs, startHelper(t, "race", dir, key, envOut+"="+out,
			envWorkers+"="+strconv.Itoa(workers), envRounds+"="+strconv.Itoa(rounds), envPolicy+"="+pol))
	}
	for i, h := range hs {
		if err := h.cmd.Wait(); err != nil {
			t.Fatalf("process %d: %v", i, err)
		}
		close(h.done)
	}
	type event struct {
		at         int64
		delta      int
		class, key string
	}
	var events []event
	for i := 0; i < procs; i++ {
		f, err := os.Open(filepath.Join(dir, fmt.Sprintf("intervals-%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		n := 0
		for sc.Scan() {
			var a, b int64
			var class, key string
			if _, err := fmt.Sscan(sc.Text(), &a, &b, &class, &key); err != nil || b < a {
				t.Fatalf("bad interval %q: %v", sc.Text(), err)
			}
			events = append(events, event{a, +1, class, key}, event{b, -1, class, key})
			n++
		}
		f.Close()
		if n != workers*rounds {
			t.Fatalf("process %d served %d of %d", i, n, workers*rounds)
		}
	}
	// Ends sort before starts at the same instant: recorded intervals lie
	// inside the real holding times, so touching ones did not overlap.
	sort.Slice(events, func(i, j int) bool {
		if events[i].at != events[j].at {
			return events[i].at < events[j].at
		}
		return events[i].delta < events[j].delta
	})
	depth, most := 0, 0
	byClass, byKey := map[string]int{}, map[string]int{}
	for _, e := range events {
		depth += e.delta
		most = max(most, depth)
		byClass[e.class] += e.delta
		byKey[e.key] += e.delta
		if policy && (byClass["batch"] > 1 || byClass["default"]+byClass["batch"] > 2 || byKey[e.key] > 2) {
			t.Fatalf("at once: batch %d (cap 1), default and batch %d (critical reserves 1 of 3), key %s %d (fair_cap 2)",
				byClass["batch"], byClass["default"]+byClass["batch"], e.key, byKey[e.key])
		}
	}
	if most > limit {
		t.Fatalf("%d holders at once across processes, limit %d", most, limit)
	}
	t.Logf("%d grants over %d processes in %v, at most %d at once", len(events)/2, procs,
		time.Duration(events[len(events)-1].at-events[0].at), most)
	b := open(t, dir, filebackend.Options{})
	st := mustStatus(t, b, key)
	if st.Used != 0 || len(st.Waiters) != 0 || st.Counters.Acquired != procs*workers*rounds {
		t.Fatalf("state after the race: %+v", st)
	}
}

// TestCrashLoop kills a process that takes and frees slots as fast as it
// can, at random moments, hundreds of times. After each kill the state
// parses, the accounts balance (every grant was released or reclaimed
// or is held), the killed holders' slots are reclaimed at once by the
// lease-file proof (the whole limit is granted immediately, with a
// higher token), and the next access leaves no temp file behind. It,
// the multi-process races and the conformance suite each have a
// directory of their own and no deadline that load could miss: they run
// beside each other (one after the other: 72 + 22 + 30 s at load 20).
func TestCrashLoop(t *testing.T) {
	t.Parallel()
	const limit = 2
	kills := 200
	if testing.Short() {
		kills = 50
	}
	dir := t.TempDir()
	key := governor.Key{Project: "crash", Resource: "run"}
	resDir := filepath.Join(dir, "crash", "run")
	b := open(t, dir, filebackend.Options{})
	var lastToken int64
	midWrite := 0
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < kills; i++ {
		h := startHelper(t, "crash", dir, key)
		if l := h.line(); l != "ready" {
			t.Fatalf("helper said %q", l)
		}
		time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond)
		h.kill()
		if _, err := os.Stat(filepath.Join(resDir, "state.tmp")); err == nil {
			midWrite++
		}
		st := mustStatus(t, b, key)
		balance(t, st)
		r := req(key, limit, limit, governor.Fail)
		res := mustAcquire(t, b, r, governor.Granted)
		if res.Token <= lastToken {
			t.Fatalf("kill %d: token %d not above %d", i, res.Token, lastToken)
		}
		lastToken = res.Token
		if err := b.Release(ctxT(t), key, r.ID, ""); err != nil {
			t.Fatal(err)
		}
		st = mustStatus(t, b, key)
		if st.Used != 0 || len(st.Holders) != 0 || len(st.Waiters) != 0 {
			t.Fatalf("kill %d: state left: %+v", i, st)
		}
		balance(t, st)
		names, err := os.ReadDir(resDir)
		if err != nil {
			t.Fatal(err)
		}
		var left []string
		for _, n := range names {
			if n.Name() != "stats" { // the statistics (Observe) stay
				left = append(left, n.Name())
			}
		}
		if !slices.Equal(left, []string{"lock", "state"}) {
			t.Fatalf("kill %d: files left in %s: %v", i, resDir, left)
		}
	}
	st := mustStatus(t, b, key)
	t.Logf("%d kills, %d mid-write; counters %+v", kills, midWrite, st.Counters)
	if st.Counters.ReclaimedDead == 0 {
		t.Fatal("no kill left a holder to reclaim: the test proves nothing")
	}
}

// balance checks that every grant was released, reclaimed, or is held.
func balance(t testing.TB, st governor.Status) {
	t.Helper()
	c := st.Counters
	if c.Acquired != c.Released+c.ReclaimedDead+c.ReclaimedExpiry+int64(len(st.Holders)) {
		t.Fatalf("accounts do not balance: %+v with %d holders", c, len(st.Holders))
	}
	if st.Used > st.Limit {
		t.Fatalf("used %d above limit %d", st.Used, st.Limit)
	}
}

// TestDeadHolderReclaimedAtOnce: a holder process killed by SIGKILL
// drops its lease-file lock with its life; the next acquire reclaims its
// slot at once, long before the TTL. While it lived, it kept the slot.
func TestDeadHolderReclaimedAtOnce(t *testing.T) {
	dir := t.TempDir()
	key := governor.Key{Project: "reclaim", Resource: "heavy"}
	b := open(t, dir, filebackend.Options{})
	h := startHelper(t, "hold", dir, key)
	f := strings.Fields(h.line())
	if len(f) != 3 || f[0] != "held" {
		t.Fatalf("helper said %v", f)
	}
	res := mustAcquire(t, b, req(key, 1, 1, governor.Fail), governor.Refused)
	if len(res.Status.Holders) != 1 || res.Status.Holders[0].LeaseID != f[1] {
		t.Fatalf("live holder not kept: %+v", res.Status)
	}
	h.kill()
	mustAcquire(t, b, req(key, 1, 1, governor.Fail), governor.Granted)
	if c := mustStatus(t, b, key).Counters; c.ReclaimedDead != 1 || c.ReclaimedExpiry != 0 {
		t.Fatalf("counters %+v, want one dead reclaim", c)
	}
}

// TestInheritedLeaseFileKeepsSlot: a holder passes its lease file to a
// child process and is killed; the slot stays proven alive while the
// child lives, and is reclaimed at once when the child dies too.
func TestInheritedLeaseFileKeepsSlot(t *testing.T) {
	dir := t.TempDir()
	key := governor.Key{Project: "inherit", Resource: "heavy"}
	b := open(t, dir, filebackend.Options{})
	h := startHelper(t, "hold", dir, key, envInherit+"=1")
	var child int
	if _, err := fmt.Sscanf(h.line(), "child %d", &child); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })
	f := strings.Fields(h.line())
	if len(f) != 3 || f[0] != "held" {
		t.Fatalf("helper said %v", f)
	}
	leasePath := filepath.Join(dir, "inherit", "heavy", "lease."+f[1])
	h.kill()
	mustAcquire(t, b, req(key, 1, 1, governor.Fail), governor.Refused)
	if err := syscall.Kill(child, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Wait, without polling, for the kernel to drop the child's lock.
	lf, err := os.Open(leasePath)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	lf.Close()
	mustAcquire(t, b, req(key, 1, 1, governor.Fail), governor.Granted)
	if c := mustStatus(t, b, key).Counters; c.ReclaimedDead != 1 {
		t.Fatalf("counters %+v, want one dead reclaim", c)
	}
}

// waiterBehindHolder holds project's "heavy" (limit 1) on a new store and
// starts a helper process that queues for it; it returns the helper's
// lease id once the helper says it is queued.
func waiterBehindHolder(t *testing.T, project string) (*filebackend.Backend, governor.Key, governor.Request, *helper, string) {
	t.Helper()
	dir := t.TempDir()
	key := governor.Key{Project: project, Resource: "heavy"}
	b := open(t, dir, filebackend.Options{})
	hold := req(key, 1, 1, governor.Fail)
	mustAcquire(t, b, hold, governor.Granted)
	h := startHelper(t, "wait", dir, key)
	l := h.line()
	id, ok := strings.CutPrefix(l, "queued ")
	if !ok {
		t.Fatalf("helper said %q", l)
	}
	return b, key, hold, h, id
}

// TestDeadWaiterDroppedAtOnce: a queued waiter whose process died does
// not block the queue until its queue TTL: its orphaned wake-up pipe
// proves it dead when it reaches the head.
func TestDeadWaiterDroppedAtOnce(t *testing.T) {
	b, key, hold, h, _ := waiterBehindHolder(t, "waiter")
	h.kill()
	if err := b.Release(ctxT(t), key, hold.ID, ""); err != nil {
		t.Fatal(err)
	}
	st := mustStatus(t, b, key)
	if st.Used != 0 || len(st.Waiters) != 0 || len(st.Holders) != 0 {
		t.Fatalf("the dead waiter was kept or granted: %+v", st)
	}
	mustAcquire(t, b, req(key, 1, 1, governor.Fail), governor.Granted)
}

// TestUnclaimedGrantOfDeadWaiterReclaimed: a grant handed to a live
// waiter that dies before claiming it is reclaimed at once.
func TestUnclaimedGrantOfDeadWaiterReclaimed(t *testing.T) {
	b, key, hold, h, id := waiterBehindHolder(t, "handed")
	if err := b.Release(ctxT(t), key, hold.ID, ""); err != nil {
		t.Fatal(err)
	}
	res := mustAcquire(t, b, req(key, 1, 1, governor.Fail), governor.Refused)
	if len(res.Status.Holders) != 1 || res.Status.Holders[0].LeaseID != id {
		t.Fatalf("the live waiter was not granted: %+v", res.Status)
	}
	h.kill()
	mustAcquire(t, b, req(key, 1, 1, governor.Fail), governor.Granted)
	if c := mustStatus(t, b, key).Counters; c.ReclaimedDead != 1 {
		t.Fatalf("counters %+v, want one dead reclaim", c)
	}
}
