package faults_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/capacity/gate"
	"github.com/governor-dev/governor/governor/proc"
	"github.com/governor-dev/governor/governor/redisbackend"
	"github.com/governor-dev/governor/internal/redistest"
)

// helperGate takes slots of RES (limit LIMIT) from a capacity lease
// (package gate: lease LEASE or 3s, refresh 200ms; its declaration this
// process, so that its death is proven) in N goroutines until the file
// STOP exists. Each grant is worked in ticks: a tick reads the monotonic
// clock, checks the grant (Grant.Err), and only then logs "W WHO.I.K
// MONO" to OUT, so that every logged instant was checked valid. It
// prints "granted" after its first tick.
func helperGate() int {
	n, _ := strconv.Atoi(os.Getenv("N"))
	limit, _ := strconv.Atoi(os.Getenv("LIMIT"))
	rdb := redis.NewClient(redisOptions(os.Getenv("REDIS_ADDR")))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := redisbackend.New(ctx, rdb)
	if err != nil {
		return helperFailed(err)
	}
	who := os.Getenv("WHO")
	lease := 3 * time.Second
	if l := os.Getenv("LEASE"); l != "" {
		if lease, err = time.ParseDuration(l); err != nil {
			return helperFailed(err)
		}
	}
	self := proc.Current()
	g, err := gate.New(ctx, b, gate.Options{Key: governor.Key{Project: os.Getenv("PROJECT"), Resource: os.Getenv("RES")}, Limit: limit,
		Lease: lease, Refresh: 200 * time.Millisecond, Margin: 300 * time.Millisecond,
		Declaration: governor.Declaration{Session: who, HostID: self.HostID, PID: self.PID, StartTime: self.StartTime}})
	if err != nil {
		return helperFailed(err)
	}
	f, err := os.OpenFile(os.Getenv("OUT"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return helperFailed(err)
	}
	stopped := func() bool { _, err := os.Stat(os.Getenv("STOP")); return err == nil }
	var first sync.Once
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			for k := 0; !stopped(); k++ {
				wctx, cancel := context.WithTimeout(context.Background(), time.Second)
				gr, err := g.Acquire(wctx)
				cancel()
				if err != nil {
					continue // none within a second: ask again
				}
				for range 20 {
					at := monoNow()
					if gr.Err() != nil {
						break
					}
					fmt.Fprintf(f, "W %s.%d.%d %d\n", who, i, k, at)
					first.Do(func() { fmt.Println("granted") })
					time.Sleep(2 * time.Millisecond)
				}
				gr.Release()
			}
		})
	}
	wg.Wait()
	if err := g.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "close:", err)
		return 3
	}
	return 0
}

// gateSpans reads a helperGate's OUT: each grant's span, from its first
// logged tick to its last.
func gateSpans(t *testing.T, path string) []span {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	first, last := map[string]int64{}, map[string]int64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var who string
		var at int64
		if _, err := fmt.Sscanf(sc.Text(), "W %s %d", &who, &at); err != nil {
			t.Fatalf("%s: bad line %q", path, sc.Text())
		}
		if _, ok := first[who]; !ok {
			first[who] = at
		}
		last[who] = at
	}
	var spans []span
	for who, at := range first {
		spans = append(spans, span{start: at, end: last[who], weight: 1, who: who})
	}
	return spans
}

// TestGateStoppedPastLease (issue 44): a process granting locally from
// its capacity lease is stopped (SIGSTOP) past its lease; its share
// expires and goes to another process, which works in it; resumed, the
// stopped process grants nothing more on its old lease. Checked with
// the work's intervals: never more than the limit at once.
func TestGateStoppedPastLease(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	project := uniq("gate")
	dir := t.TempDir()
	stop := filepath.Join(dir, "stop")
	const limit = 4
	procs := map[string]*exec.Cmd{}
	start := gateStarter(t, s.Addr, project, dir, stop, limit, procs)
	aOut, aFile := start("a")
	expectLine(t, aOut, "granted", 60*time.Second)
	a := procs["a"]
	if err := a.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stoppedAt := monoNow()
	bOut, bFile := start("b")
	expectLine(t, bOut, "granted", 60*time.Second)
	if d := time.Duration(monoNow() - stoppedAt); d < 2*time.Second {
		t.Fatalf("the stopped process's share was granted elsewhere %v after the stop, before its lease (3s less a refresh) could end", d)
	}
	time.Sleep(time.Second) // b works in the share; not a decision: the spans decide
	if err := a.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // both work side by side
	if err := os.WriteFile(stop, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for who, c := range procs {
		if err := c.Wait(); err != nil {
			t.Fatalf("%s: %v", who, err)
		}
	}
	checkGateSpans(t, aFile, bFile, limit)
}

// gateStarter returns a func that starts helperGate WHO on addr (LIMIT
// limit, N 6, OUT in dir, env added), killed at cleanup, into procs, and
// returns its stdout and OUT.
func gateStarter(t *testing.T, addr, project, dir, stop string, limit int, procs map[string]*exec.Cmd,
	env ...string) func(who string) (<-chan string, string) {
	return func(who string) (<-chan string, string) {
		out := filepath.Join(dir, who)
		c := helperCmd(t, "gate", append([]string{"REDIS_ADDR=" + addr, "PROJECT=" + project, "RES=provider:hot",
			"LIMIT=" + strconv.Itoa(limit), "N=6", "OUT=" + out, "STOP=" + stop, "WHO=" + who}, env...)...)
		lines, _ := startKilledAtCleanup(t, c)
		procs[who] = c
		return lines, out
	}
}

// checkGateSpans checks the spans of helperGate a (whose OUT is aFile)
// and b together: b was granted, and never more than limit at once.
func checkGateSpans(t *testing.T, aFile, bFile string, limit int) {
	t.Helper()
	aSpans, bSpans := gateSpans(t, aFile), gateSpans(t, bFile)
	if len(bSpans) == 0 {
		t.Fatal("the second process was never granted")
	}
	peak := checkSpans(t, append(aSpans, bSpans...), limit)
	t.Logf("grants: a %d, b %d; peak %d of %d", len(aSpans), len(bSpans), peak, limit)
}

// TestGateKilledShareReturns (issue 44): a process granting locally
// from its capacity lease (60s) is killed (SIGKILL); another process on
// the machine takes the whole share at its first refresh, since the
// killed one's declared pid and start time prove it dead, rather than
// once its lease has ended: the backend counts the reclaim. The work's
// intervals never hold more than the limit at once.
func TestGateKilledShareReturns(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	project := uniq("gatekill")
	dir := t.TempDir()
	stop := filepath.Join(dir, "stop")
	const limit = 4
	procs := map[string]*exec.Cmd{}
	start := gateStarter(t, s.Addr, project, dir, stop, limit, procs, "LEASE=60s")
	aOut, aFile := start("a")
	expectLine(t, aOut, "granted", 60*time.Second)
	a := procs["a"]
	if err := a.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = a.Wait()
	delete(procs, "a")
	bOut, bFile := start("b")
	// Half the killed process's lease: only its proof of death gets
	// there (the reclaim counted below tells which way it came).
	expectLine(t, bOut, "granted", 30*time.Second)
	key := governor.Key{Project: project, Resource: "provider:hot"}
	if st := status(t, backend(t, client(t, s.Addr)), key); st.Counters.ReclaimedDead != 1 || st.Used != limit {
		t.Fatalf("after the killed process's share returned: reclaimed dead %d, used %d of %d", st.Counters.ReclaimedDead, st.Used, limit)
	}
	if err := os.WriteFile(stop, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := procs["b"].Wait(); err != nil {
		t.Fatalf("b: %v", err)
	}
	checkGateSpans(t, aFile, bFile, limit)
}
