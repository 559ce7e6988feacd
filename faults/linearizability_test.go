package faults_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/redis/go-redis/v9"

	"github.com/governor-dev/governor/faults"
	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/filebackend"
	"github.com/governor-dev/governor/internal/redistest"
)

// Issue 32: the backends' try-acquire, renew and release are
// linearizable against a counting semaphore with leases: porcupine
// searches, over a history of concurrent clients (each with its own
// backend, as separate processes would have), for one order of the
// operations, each taking effect between its call and its return, in
// which a sequential semaphore gives every reply seen. On Redis the
// connections are cut and the server restarted (its append-only file
// fsynced at every write, so that a restart loses no acknowledged
// write) while the clients work; an operation that fails on the
// transport has an unknown outcome: it may take effect at any time after
// its call, or never.

// semLimit is the semaphore's limit; the leases' TTL outlives the test,
// so that nothing expires and the model needs no clock.
const (
	semLimit = 2
	semTTL   = 5 * time.Minute
)

type semOp int

const (
	opAcquire semOp = iota
	opRenew
	opRelease
)

func (o semOp) String() string { return [...]string{"acquire", "renew", "release"}[o] }

type semInput struct {
	op semOp
	id string
}

// semOutput is a reply: ok (granted, renewed, released), or not (refused,
// lost, not held); unknown when the transport failed.
type semOutput struct {
	ok      bool
	token   int64
	unknown bool
}

// semState is the semaphore: its holders (sorted, "" for a free slot)
// and the largest token granted so far. Comparable, as porcupine's
// default equality needs.
type semState struct {
	holders [semLimit]string
	last    int64
}

func (s semState) held(id string) bool {
	for _, h := range s.holders {
		if h == id {
			return true
		}
	}
	return false
}

func (s semState) used() int {
	n := 0
	for _, h := range s.holders {
		if h != "" {
			n++
		}
	}
	return n
}

func (s semState) with(id string, token int64) semState {
	hs := append([]string(nil), s.holders[:]...)
	for i, h := range hs {
		if h == "" {
			hs[i] = id
			break
		}
	}
	return s.set(hs, max(s.last, token))
}

func (s semState) without(id string) semState {
	hs := append([]string(nil), s.holders[:]...)
	for i, h := range hs {
		if h == id {
			hs[i] = ""
		}
	}
	return s.set(hs, s.last)
}

func (s semState) set(hs []string, last int64) semState {
	sort.Slice(hs, func(i, j int) bool { return hs[i] > hs[j] }) // "" last
	var n semState
	copy(n.holders[:], hs)
	n.last = last
	return n
}

// semModel is a counting semaphore of semLimit with leases: an acquire is
// granted, with a token above every earlier one, exactly when a slot is
// free (an id already held is never granted twice); renew and release
// succeed exactly when the id is held. An unknown outcome is both.
var semModel = porcupine.NondeterministicModel{
	Init: func() []any { return []any{semState{}} },
	Step: func(state, input, output any) []any {
		s, in, out := state.(semState), input.(semInput), output.(semOutput)
		var next []any
		switch in.op {
		case opAcquire:
			canGrant := !s.held(in.id) && s.used() < semLimit
			if out.unknown {
				next = append(next, s)
				if canGrant {
					next = append(next, s.with(in.id, 0)) // its token is unknown
				}
			} else if out.ok && canGrant && out.token > s.last {
				next = append(next, s.with(in.id, out.token))
			} else if !out.ok && s.used() == semLimit && !s.held(in.id) {
				next = append(next, s)
			}
		case opRenew:
			if out.unknown || out.ok == s.held(in.id) {
				next = append(next, s)
			}
		case opRelease:
			if out.unknown {
				next = append(next, s, s.without(in.id))
			} else if out.ok == s.held(in.id) {
				next = append(next, s.without(in.id))
			}
		}
		return next
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(semInput), output.(semOutput)
		switch {
		case out.unknown:
			return fmt.Sprintf("%s(%s) -> ?", in.op, in.id)
		case in.op == opAcquire && out.ok:
			return fmt.Sprintf("acquire(%s) -> granted %d", in.id, out.token)
		}
		return fmt.Sprintf("%s(%s) -> %v", in.op, in.id, out.ok)
	},
	DescribeState: func(state any) string {
		s := state.(semState)
		return fmt.Sprintf("%q last %d", s.holders, s.last)
	},
}

// history records operations with their call and return times.
type history struct {
	start time.Time
	mu    sync.Mutex
	ops   []porcupine.Operation
}

func (h *history) do(client int, in semInput, f func() semOutput) semOutput {
	call := time.Since(h.start).Nanoseconds()
	out := f()
	ret := time.Since(h.start).Nanoseconds()
	if out.unknown {
		ret = math.MaxInt64 // it may take effect at any time after its call
	}
	h.mu.Lock()
	h.ops = append(h.ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
	h.mu.Unlock()
	return out
}

// semClient runs try-acquire, renews and release on b until ctx ends. A
// lease whose acquire's outcome is unknown is released (until a release
// answers) before the client goes on, so that it holds no slot forever.
//
// retried is true where the client resends a command after a broken
// connection (go-redis's MaxRetries, governor's own clients included):
// a release whose first run freed the lease and whose reply was lost
// then answers "not held" from its second run. Such a reply is taken
// for an unknown outcome (released or not): the release did happen, but
// its reply cannot tell (issue 32's finding, docs/fault-tests.md).
func semClient(ctx context.Context, h *history, b governor.Backend, key governor.Key, client int, retried bool) {
	rng := rand.New(rand.NewPCG(uint64(client), 32))
	opctx := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), 3*time.Second)
	}
	unknown := func(err error) bool {
		return err != nil && !errors.Is(err, governor.ErrNotHeld) && !errors.Is(err, governor.ErrLeaseLost) && !isLeaseLost(err)
	}
	// release reports whether the transport failed (try again).
	release := func(id string) bool {
		var failed bool
		h.do(client, semInput{opRelease, id}, func() semOutput {
			c, cancel := opctx()
			defer cancel()
			err := b.Release(c, key, id, "")
			failed = unknown(err)
			return semOutput{ok: err == nil, unknown: failed || retried && errors.Is(err, governor.ErrNotHeld)}
		})
		return failed
	}
	for n := 0; ctx.Err() == nil; n++ {
		id := fmt.Sprintf("c%d-%d", client, n)
		out := h.do(client, semInput{opAcquire, id}, func() semOutput {
			c, cancel := opctx()
			defer cancel()
			r, err := b.Acquire(c, governor.Request{Key: key, ID: id, Limit: semLimit, Weight: 1, TTL: semTTL, Mode: governor.Fail, QueueTTL: time.Minute, New: true})
			if err != nil {
				return semOutput{unknown: true}
			}
			return semOutput{ok: r.Outcome == governor.Granted, token: r.Token}
		})
		if out.ok || out.unknown {
			if out.ok {
				for k := rng.IntN(3); k > 0; k-- {
					h.do(client, semInput{opRenew, id}, func() semOutput {
						c, cancel := opctx()
						defer cancel()
						_, err := b.Renew(c, governor.Renewal{Key: key, ID: id, Secret: "", Token: out.token, TTL: semTTL})
						return semOutput{ok: err == nil, unknown: unknown(err)}
					})
				}
			}
			time.Sleep(time.Duration(rng.IntN(5)) * time.Millisecond)
			for try := 0; try < 200 && release(id); try++ {
				time.Sleep(20 * time.Millisecond)
			}
		}
		time.Sleep(time.Duration(rng.IntN(3)) * time.Millisecond)
	}
}

func isLeaseLost(err error) bool {
	var lle *governor.LeaseLostError
	return errors.As(err, &lle)
}

// checkLinearizable runs clients on the backends open opens, for d
// without a fault, or while fault (if any) injects its faults, until it
// returns, and checks the history. The faults end the run, not a clock:
// a restart that took seconds at load once left no time for the next.
func checkLinearizable(t *testing.T, d time.Duration, clients int, retried bool, open func(client int) governor.Backend, fault func()) {
	key := governor.Key{Project: uniq("linear"), Resource: "sem"}
	h := &history{start: time.Now()}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if fault != nil {
		ctx, cancel = context.WithCancel(context.Background())
		defer cancel()
	}
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		b := open(c)
		wg.Add(1)
		go func() {
			defer wg.Done()
			semClient(ctx, h, b, key, c, retried)
		}()
	}
	if fault != nil {
		fault()
		cancel()
	}
	wg.Wait()
	unknown := 0
	for _, op := range h.ops {
		if op.Output.(semOutput).unknown {
			unknown++
		}
	}
	t.Logf("%d operations, %d with an unknown outcome", len(h.ops), unknown)
	if len(h.ops) < 50 {
		t.Fatalf("only %d operations: the clients did not run", len(h.ops))
	}
	res, info := porcupine.CheckOperationsVerbose(semModel.ToModel(), h.ops, 2*time.Minute)
	switch res {
	case porcupine.Ok:
	case porcupine.Unknown:
		t.Fatalf("the check did not end within its time (%d operations)", len(h.ops))
	default:
		p := filepath.Join(t.TempDir(), "history.html")
		if f, err := os.Create(p); err == nil {
			_ = porcupine.Visualize(semModel.ToModel(), info, f)
			f.Close()
		}
		t.Fatalf("not linearizable (%d operations; visualization %s):\n%s", len(h.ops), p, lastOps(h.ops, 30))
	}
}

// lastOps describes the last n operations by call time, for the failure.
func lastOps(ops []porcupine.Operation, n int) string {
	s := append([]porcupine.Operation(nil), ops...)
	sort.Slice(s, func(i, j int) bool { return s[i].Call < s[j].Call })
	if len(s) > n {
		s = s[len(s)-n:]
	}
	var b strings.Builder
	for _, op := range s {
		fmt.Fprintf(&b, "  client %d [%d, %d] %s\n", op.ClientId, op.Call, op.Return, semModel.DescribeOperation(op.Input, op.Output))
	}
	return b.String()
}

// The file backend: clients each with their own backend on one state
// directory, as separate processes have.
func TestLinearizableFile(t *testing.T) {
	dir := t.TempDir()
	checkLinearizable(t, 3*time.Second, 4, false, func(int) governor.Backend {
		b, err := filebackend.New(dir, filebackend.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}, nil)
}

// Redis, its connections cut every 100-300 ms through the fault proxy and
// the server SIGKILLed and restarted twice (append-only file, fsync at
// every write): 2 s of cuts before each restart and after the last.
func TestLinearizableRedisCutsAndRestarts(t *testing.T) {
	s := redistest.Start(t, "--appendonly", "yes", "--appendfsync", "always")
	p, err := faults.NewProxy(s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	checkLinearizable(t, 0, 4, true, func(int) governor.Backend {
		return backend(t, redis.NewClient(&redis.Options{Addr: p.Addr(), ContextTimeoutEnabled: true}))
	}, func() {
		rng := rand.New(rand.NewPCG(1, 2))
		for restarts := 0; ; restarts++ {
			for end := time.Now().Add(2 * time.Second); time.Now().Before(end); {
				time.Sleep(time.Duration(100+rng.IntN(200)) * time.Millisecond)
				p.Cut()
			}
			if restarts == 2 {
				return
			}
			if err := s.Restart(); err != nil {
				t.Error(err)
				return
			}
		}
	})
}

// Redis without faults: the plain concurrent history.
func TestLinearizableRedis(t *testing.T) {
	s := redistest.Start(t)
	checkLinearizable(t, 3*time.Second, 4, false, func(int) governor.Backend { return backend(t, client(t, s.Addr)) }, nil)
}
