package faults_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sys/unix"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/redisbackend"
	"github.com/governor-dev/governor/internal/proctest"
)

// helperEnv makes the test binary act as a helper process (see
// helper_test.go) instead of running tests.
const helperEnv = "FAULTS_HELPER"

// bin is the governor CLI the tests run; TestMain removes it at the end.
var bin proctest.Binary

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helperMain(mode))
	}
	// The parallel tests (and their worlds) mostly wait: on processes,
	// TTLs and servers. Four at once, on any number of CPUs.
	proctest.DefaultParallel(4)
	code := m.Run()
	bin.Remove()
	os.Exit(code)
}

// governorBin builds the governor CLI once (without -race: it is the
// program under test, not the test) and returns its path.
func governorBin(t *testing.T) string { return bin.Path(t) }

// monoNow reads CLOCK_MONOTONIC, which every process of the machine
// shares: spans recorded by different processes can be merged.
func monoNow() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// uniq returns a fresh project name: tests never share keys.
func uniq(prefix string) string {
	return prefix + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
}

// eventually polls cond every 20ms until it holds, failing t after d.
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// redisOptions are the client options of the tests: go-redis bounds a
// command by its context's deadline only with ContextTimeoutEnabled
// (otherwise by ReadTimeout, 5s), and a lease's renewal relies on it (see
// TestPartitionDefaultClient).
func redisOptions(addr string) *redis.Options {
	return &redis.Options{Addr: addr, ContextTimeoutEnabled: true}
}

// client returns a go-redis client of addr, closed at t's cleanup.
func client(t testing.TB, addr string) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(redisOptions(addr))
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// backend opens a Redis backend on rdb, closed at t's cleanup.
func backend(t testing.TB, rdb redis.UniversalClient) *redisbackend.Backend {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := redisbackend.New(ctx, rdb)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// newGovernor opens a Governor on its own client of addr. Cleanup closes
// the Governor (releasing what it still holds), then the client.
func newGovernor(t testing.TB, addr string, o governor.Options) *governor.Governor {
	t.Helper()
	return newGovernorWith(t, redisOptions(addr), o)
}

// newGovernorWith is newGovernor with the given client options.
func newGovernorWith(t testing.TB, ro *redis.Options, o governor.Options) *governor.Governor {
	t.Helper()
	rdb := redis.NewClient(ro)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := redisbackend.New(ctx, rdb)
	if err != nil {
		rdb.Close()
		t.Fatal(err)
	}
	g, err := governor.New(b, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		g.Close()
		rdb.Close()
	})
	return g
}

func status(t testing.TB, b governor.Backend, key governor.Key) governor.Status {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := b.Status(ctx, key)
	if err != nil {
		t.Fatalf("status of %s: %v", key, err)
	}
	return st
}

func holds(st governor.Status, id string) bool {
	for _, h := range st.Holders {
		if h.LeaseID == id {
			return true
		}
	}
	return false
}

// span is an interval of protected work, on CLOCK_MONOTONIC, with the
// weight it held.
type span struct {
	start, end int64
	weight     int
	who        string
}

// checkSpans is the independent checker of SPEC invariant 1 as the
// protected work sees it: merged, the spans never carry more weight than
// limit at one instant. It returns the peak.
func checkSpans(t testing.TB, spans []span, limit int) int {
	t.Helper()
	type ev struct {
		at  int64
		d   int
		who string
	}
	evs := make([]ev, 0, 2*len(spans))
	for _, s := range spans {
		if s.end < s.start {
			t.Fatalf("span of %s ends before it starts: %+v", s.who, s)
		}
		evs = append(evs, ev{s.start, s.weight, s.who}, ev{s.end, -s.weight, s.who})
	}
	sort.Slice(evs, func(i, j int) bool {
		if evs[i].at != evs[j].at {
			return evs[i].at < evs[j].at
		}
		return evs[i].d < evs[j].d // an end before a start at the same instant
	})
	cur, peak := 0, 0
	in := map[string]int{}
	for _, e := range evs {
		cur += e.d
		in[e.who] += e.d
		if cur > limit {
			var who []string
			for w, n := range in {
				if n > 0 {
					who = append(who, fmt.Sprintf("%s(%d)", w, n))
				}
			}
			sort.Strings(who)
			t.Fatalf("weight %d in use at once by %s, limit %d", cur, strings.Join(who, " "), limit)
		}
		peak = max(peak, cur)
	}
	return peak
}

// fence is a protected store that checks fencing tokens: it refuses a
// write whose token is lower than the highest it has accepted. Processes
// reach it on a Unix socket ("W TOKEN WHO CHECKED_MONO\n" -> "ok\n" or
// "refused HIGHEST\n"); the test process calls write directly.
type fence struct {
	ln   net.Listener
	Path string

	mu      sync.Mutex
	highest int64
	log     []fenceWrite
}

type fenceWrite struct {
	token    int64
	who      string
	checked  int64 // when the writer last saw its lease held (mono)
	at       int64 // when the store decided (mono)
	accepted bool
}

func newFence(t testing.TB) *fence {
	t.Helper()
	// Unix socket paths are short: not under t.TempDir's long names.
	dir, err := os.MkdirTemp("", "fence")
	if err != nil {
		t.Fatal(err)
	}
	f := &fence{Path: filepath.Join(dir, "s")}
	f.ln, err = net.Listen("unix", f.Path)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		f.ln.Close()
		wg.Wait()
		os.RemoveAll(dir)
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := f.ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				sc := bufio.NewScanner(c)
				for sc.Scan() {
					var tok, checked int64
					var who string
					if _, err := fmt.Sscanf(sc.Text(), "W %d %s %d", &tok, &who, &checked); err != nil {
						fmt.Fprintf(c, "error %v\n", err)
						continue
					}
					if ok, hi := f.write(tok, who, checked); ok {
						fmt.Fprintln(c, "ok")
					} else {
						fmt.Fprintf(c, "refused %d\n", hi)
					}
				}
			}()
		}
	}()
	return f
}

// write stores a write of who with token, unless a higher token was
// accepted before. It returns whether it was accepted and the highest
// token.
func (f *fence) write(token int64, who string, checked int64) (bool, int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w := fenceWrite{token: token, who: who, checked: checked, at: monoNow()}
	if token >= f.highest {
		f.highest = token
		w.accepted = true
	}
	f.log = append(f.log, w)
	return w.accepted, f.highest
}

func (f *fence) writes() []fenceWrite {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fenceWrite(nil), f.log...)
}

// spans returns the accepted writes as spans of protected work: from the
// writer's last check that it held its lease to the store's decision.
func (f *fence) spans() []span {
	var out []span
	for _, w := range f.writes() {
		if w.accepted {
			out = append(out, span{start: w.checked, end: w.at, weight: 1, who: w.who})
		}
	}
	return out
}

// check verifies what fencing must give: each writer holds one token,
// different writers different tokens, and in the order the store saw
// them, once a writer with a higher token wrote, no lower one got in.
func (f *fence) check(t testing.TB) {
	t.Helper()
	tokens := map[string]int64{}
	owner := map[int64]string{}
	var hi int64
	for _, w := range f.writes() {
		if prev, ok := tokens[w.who]; ok && prev != w.token {
			t.Fatalf("writer %s used tokens %d and %d", w.who, prev, w.token)
		}
		tokens[w.who] = w.token
		if o, ok := owner[w.token]; ok && o != w.who {
			t.Fatalf("token %d granted to both %s and %s", w.token, o, w.who)
		}
		owner[w.token] = w.who
		if w.accepted {
			if w.token < hi {
				t.Fatalf("store accepted token %d of %s after %d", w.token, w.who, hi)
			}
			hi = w.token
		} else if w.token >= hi {
			t.Fatalf("store refused token %d of %s, not below %d", w.token, w.who, hi)
		}
	}
}

// goroutines returns the stacks of live goroutines that run governor's
// own code (leases, waits, the Redis backend's dispatcher).
func governorGoroutines() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "governor-dev/governor/governor.") || strings.Contains(g, "governor-dev/governor/governor/redisbackend.") {
			out = append(out, g)
		}
	}
	return out
}

// noLeaks waits for every governor goroutine to end: call it after
// closing every Governor and backend of a test that runs alone.
func noLeaks(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		gs := governorGoroutines()
		if len(gs) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d governor goroutines still running:\n%s", len(gs), strings.Join(gs, "\n\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
