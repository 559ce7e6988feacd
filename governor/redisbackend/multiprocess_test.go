package redisbackend_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sys/unix"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/redisbackend"
	"github.com/governor-dev/governor/internal/redistest"
)

// helperEnv selects what a re-executed test binary does.
const helperEnv = "GOVERNOR_TEST_HELPER"

func monoNow() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// TestHelperProcess is not a test: it is the body of the worker processes
// the multi-process tests start.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		t.Skip("helper process only")
	}
	addr, project := os.Getenv("REDIS_ADDR"), os.Getenv("PROJECT")
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	be, err := redisbackend.New(context.Background(), rdb)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	g, err := governor.New(be, governor.Options{Project: project, TTL: 2 * time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	switch mode {
	case "hammer":
		hammerWorker(g, os.Getenv("OUT"), os.Getenv("POLICY") == "1")
	case "hold":
		// Take the slot, say so, and wait to be killed.
		l, err := g.Acquire(context.Background(), "heavy", governor.AcquireOptions{Limit: 1})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Printf("held %s\n", l.ID())
		select {}
	case "wait":
		// Queue behind the holder, say so, and wait to be killed.
		_, _ = g.Acquire(context.Background(), "heavy", governor.AcquireOptions{Limit: 1, Mode: governor.Wait,
			OnQueued: func(r governor.Result) { fmt.Printf("queued %d\n", r.Position) }})
		select {}
	}
	os.Exit(0)
}

// mpPolicy is the queue policy of the multi-process hammer under
// policies: a reserve, a cap, fairness with a fair cap.
var mpPolicy = governor.Policy{Classes: []governor.Class{{Name: "critical", Reserve: 1}, {Name: "default"}, {Name: "batch", Cap: 1}},
	MaxOvertakes: 3, FairWeights: map[string]int{"k0": 2}, FairCap: 2}

// hammerWorker takes and releases slots from 16 goroutines and writes
// one line per hold: "start end weight class key token", class and key
// "-" without a policy.
func hammerWorker(g *governor.Governor, out string, policy bool) {
	f, err := os.OpenFile(out, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		os.Exit(2)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for j := 0; j < 4; j++ {
				w := 1 + (i+j)%2
				o := governor.AcquireOptions{Limit: 3, Weight: w, Mode: governor.Wait}
				class, key := "-", "-"
				if policy {
					class, key = []string{"critical", "default", "batch"}[(i+j)%3], "k"+strconv.Itoa(i%3)
					o.Policy, o.Priority, o.FairKey = mpPolicy, class, key
					if class != "default" {
						o.Weight, w = 1, 1
					}
				}
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				l, err := g.Acquire(ctx, "provider:anthropic", o)
				cancel()
				if err != nil {
					fmt.Fprintln(os.Stderr, "acquire:", err)
					os.Exit(3)
				}
				start := monoNow()
				time.Sleep(2 * time.Millisecond)
				end := monoNow()
				if err := l.Release(); err != nil {
					fmt.Fprintln(os.Stderr, "release:", err)
					os.Exit(3)
				}
				mu.Lock()
				fmt.Fprintf(f, "%d %d %d %s %s %d\n", start, end, w, class, key, l.Token())
				mu.Unlock()
			}
		}(i)
	}
	wg.Wait()
	_ = f.Close()
}

func helper(t *testing.T, mode, addr, project string, extra ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, "REDIS_ADDR="+addr, "PROJECT="+project)
	cmd.Env = append(cmd.Env, extra...)
	cmd.Stderr = os.Stderr
	return cmd
}

// TestMultiProcessNeverOverLimit: 4 OS processes x 16 goroutines, weights
// 1 and 2, limit 3. Each records the interval it held, on the machine's
// monotonic clock, strictly inside its lease; merged, the intervals never
// carry more than 3 at once.
func TestMultiProcessNeverOverLimit(t *testing.T) {
	multiProcessHammer(t, false)
}

// TestMultiProcessPolicyInvariants: the same under a queue policy
// (mpPolicy): never over the limit, batch never over its cap, the
// classes below critical never in its reserve, no fair key over
// fair_cap, and every token given once.
func TestMultiProcessPolicyInvariants(t *testing.T) {
	multiProcessHammer(t, true)
}

func multiProcessHammer(t *testing.T, policy bool) {
	s := redistest.Start(t)
	project := "mp-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	out := filepath.Join(t.TempDir(), "intervals")
	pol := "POLICY=0"
	if policy {
		pol = "POLICY=1"
	}
	var cmds []*exec.Cmd
	for i := 0; i < 4; i++ {
		c := helper(t, "hammer", s.Addr, project, "OUT="+out, pol)
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, c)
	}
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("worker: %v", err)
		}
	}
	type ev struct {
		at         int64
		d          int
		class, key string
	}
	var evs []ev
	tokens := map[int64]bool{}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		var a, b, tok int64
		var w int
		var class, key string
		if _, err := fmt.Sscanf(sc.Text(), "%d %d %d %s %s %d", &a, &b, &w, &class, &key, &tok); err != nil {
			t.Fatalf("bad line %q", sc.Text())
		}
		if tokens[tok] {
			t.Fatalf("token %d given twice", tok)
		}
		tokens[tok] = true
		evs = append(evs, ev{a, w, class, key}, ev{b, -w, class, key})
		n++
	}
	if n != 4*16*4 {
		t.Fatalf("served %d acquires, want %d", n, 4*16*4)
	}
	sort.Slice(evs, func(i, j int) bool {
		if evs[i].at != evs[j].at {
			return evs[i].at < evs[j].at
		}
		return evs[i].d < evs[j].d // ends before starts at the same instant
	})
	cur, peak := 0, 0
	byClass, byKey := map[string]int{}, map[string]int{}
	for _, e := range evs {
		cur += e.d
		peak = max(peak, cur)
		byClass[e.class] += e.d
		byKey[e.key] += e.d
		if !policy {
			continue
		}
		if byClass["batch"] > 1 {
			t.Fatalf("batch held %d at once, cap 1", byClass["batch"])
		}
		if byClass["default"]+byClass["batch"] > 3-1 {
			t.Fatalf("default and batch held %d at once: critical's reserve of 1 taken", byClass["default"]+byClass["batch"])
		}
		if byKey[e.key] > 2 {
			t.Fatalf("fair key %s held %d at once, fair_cap 2", e.key, byKey[e.key])
		}
	}
	if peak > 3 {
		t.Fatalf("weight %d held at once across processes, limit 3", peak)
	}
	if peak < 2 {
		t.Fatalf("peak %d: the workers never overlapped, the test proves nothing", peak)
	}
}

// readLine waits for a line starting with prefix on r.
func readLine(t *testing.T, sc *bufio.Scanner, prefix string) string {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), prefix) {
				got <- sc.Text()
				return
			}
		}
		close(got)
	}()
	select {
	case l, ok := <-got:
		if !ok {
			t.Fatalf("helper ended before printing %q", prefix)
		}
		return l
	case <-time.After(30 * time.Second):
		t.Fatalf("helper did not print %q", prefix)
	}
	return ""
}

func startHelper(t *testing.T, mode, addr, project string) (*exec.Cmd, *bufio.Scanner) {
	c := helper(t, mode, addr, project)
	stdout, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	return c, bufio.NewScanner(stdout)
}

// TestKilledHolderReclaimedAfterTTL: a holder process is SIGKILLed; a
// waiter that does not use the same-host proof (a raw backend acquire) is
// granted once the lease's TTL has passed, and not before.
func TestKilledHolderReclaimedAfterTTL(t *testing.T) {
	t.Parallel() // its own server; load only delays the grant it waits for
	s := redistest.Start(t)
	project := "kill-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	holder, out := startHelper(t, "hold", s.Addr, project)
	readLine(t, out, "held")
	be := open(t, s.Addr)
	key := governor.Key{Project: project, Resource: "heavy"}
	_ = holder.Process.Signal(syscall.SIGKILL)
	killed := time.Now()
	r := governor.Request{Key: key, ID: "raw-waiter", Limit: 1, Weight: 1, TTL: 10 * time.Second,
		Mode: governor.Wait, QueueTTL: time.Minute}
	for {
		res, err := be.Acquire(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		if res.Outcome == governor.Granted {
			break
		}
		if time.Since(killed) > 30*time.Second {
			t.Fatal("killed holder's slot never freed")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The holder's TTL was 2s, renewed at most a heartbeat before the kill.
	if el := time.Since(killed); el < 2*time.Second/3 {
		t.Fatalf("slot freed %v after the kill, before the holder's TTL could pass", el)
	}
	if st, _ := be.Status(context.Background(), key); st.Counters.ReclaimedExpiry != 1 {
		t.Fatalf("expiry reclaim not counted: %+v", st.Counters)
	}
}

// TestKilledHolderReclaimedAtOnceOnSameHost: with the same-host proof the
// Governor does not wait for the TTL.
func TestKilledHolderReclaimedAtOnceOnSameHost(t *testing.T) {
	s := redistest.Start(t)
	project := "killnow-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	holder, out := startHelper(t, "hold", s.Addr, project)
	readLine(t, out, "held")
	_ = holder.Process.Signal(syscall.SIGKILL)
	_ = holder.Wait()
	g, err := governor.New(open(t, s.Addr), governor.Options{Project: project, TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	l, err := g.Acquire(context.Background(), "heavy", governor.AcquireOptions{Limit: 1})
	if err != nil {
		t.Fatalf("dead holder not reclaimed at once: %v", err)
	}
	_ = l.Release()
}

// TestKilledWaiterSkipped: a waiter process killed in the queue does not
// block the live waiter behind it.
func TestKilledWaiterSkipped(t *testing.T) {
	s := redistest.Start(t)
	project := "deadwait-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	g, err := governor.New(open(t, s.Addr), governor.Options{Project: project, TTL: time.Minute, QueueTTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	h, err := g.Acquire(context.Background(), "heavy", governor.AcquireOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	waiter, out := startHelper(t, "wait", s.Addr, project)
	readLine(t, out, "queued 1")
	_ = waiter.Process.Signal(syscall.SIGKILL)
	_ = waiter.Wait()
	got := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		l, err := g.Acquire(ctx, "heavy", governor.AcquireOptions{Limit: 1, Mode: governor.Wait})
		if err == nil {
			_ = l.Release()
		}
		got <- err
	}()
	time.Sleep(100 * time.Millisecond)
	_ = h.Release()
	if err := <-got; err != nil {
		t.Fatalf("live waiter behind a killed one: %v", err)
	}
}
