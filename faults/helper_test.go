package faults_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/redisbackend"
)

// helperMain is the body of a helper process: the test binary re-executed
// with FAULTS_HELPER=mode. It returns the exit code.
func helperMain(mode string) int {
	switch mode {
	case "hold":
		return helperHold()
	case "fencewriter":
		return helperFenceWriter()
	case "churn":
		return helperChurn()
	case "progress":
		return helperProgress()
	case "gate":
		return helperGate()
	case "rate":
		return helperRate()
	}
	fmt.Fprintln(os.Stderr, "unknown helper mode", mode)
	return 2
}

func helperGovernor(ttl, queueTTL time.Duration) (*governor.Governor, error) {
	rdb := redis.NewClient(redisOptions(os.Getenv("REDIS_ADDR")))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := redisbackend.New(ctx, rdb)
	if err != nil {
		return nil, err
	}
	return governor.New(b, governor.Options{Project: os.Getenv("PROJECT"), TTL: ttl, QueueTTL: queueTTL,
		Session: os.Getenv("WHO")})
}

// fenceClient writes to the test's fence store.
type fenceClient struct {
	c  net.Conn
	sc *bufio.Scanner
}

func dialFence() (*fenceClient, error) {
	c, err := net.Dial("unix", os.Getenv("FENCE"))
	if err != nil {
		return nil, err
	}
	return &fenceClient{c: c, sc: bufio.NewScanner(c)}, nil
}

// write reports whether the store accepted a write with token, made
// after the writer last saw its lease held at checked.
func (f *fenceClient) write(token int64, who string, checked int64) (bool, error) {
	if _, err := fmt.Fprintf(f.c, "W %d %s %d\n", token, who, checked); err != nil {
		return false, err
	}
	if !f.sc.Scan() {
		return false, fmt.Errorf("fence closed")
	}
	return f.sc.Text() == "ok", nil
}

// helperFailed reports err on stderr; a helper process exits 2 on a
// failure of its own, which the test tells apart from what it asserts.
func helperFailed(err error) int {
	fmt.Fprintln(os.Stderr, err)
	return 2
}

// helperHold takes one slot of RES (limit 1), prints "held TOKEN ID", and
// does protected work: a fenced write every 50ms, each after checking
// that the lease is still held. It prints "lost-seen" when the check
// finds the lease lost, "refused" when the store refuses a write, and
// "done MONO ERR" when Done closes; then it waits to be killed. It prints
// "stale-held GAP_MS" when, after a pause of more than the TTL, its check
// still finds the lease held. With SPIN=1 it only checks, in a busy loop
// (as a worker in the middle of a computation is).
func helperHold() int {
	g, err := helperGovernor(2*time.Second, 2*time.Second)
	if err != nil {
		return helperFailed(err)
	}
	fc, err := dialFence()
	if err != nil {
		return helperFailed(err)
	}
	who := os.Getenv("WHO")
	l, err := g.Acquire(context.Background(), os.Getenv("RES"), governor.AcquireOptions{Limit: 1, Mode: governor.Wait})
	if err != nil {
		return helperFailed(err)
	}
	var out sync.Mutex
	say := func(format string, args ...any) {
		out.Lock()
		defer out.Unlock()
		fmt.Printf(format+"\n", args...)
	}
	say("held %d %s", l.Token(), l.ID())
	go func() {
		<-l.Done()
		say("done %d %v", monoNow(), l.Err())
	}()
	spin := os.Getenv("SPIN") == "1"
	prev := monoNow()
	for {
		checked := monoNow()
		gap := time.Duration(checked - prev)
		prev = checked
		if l.Err() != nil {
			say("lost-seen")
			break
		}
		if gap > 2*time.Second {
			// This process was paused past its TTL, yet its lease
			// still reads as held.
			say("stale-held %d", gap.Milliseconds())
		}
		if spin {
			continue
		}
		ok, err := fc.write(l.Token(), who, checked)
		if err != nil {
			return helperFailed(err)
		}
		if !ok {
			say("refused")
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	select {}
}

// helperFenceWriter is the command of a `governor run`: it writes to the
// fence store with the token governor gave it (GOVERNOR_TOKEN) every
// 50ms for DURATION, whatever the store answers, printing "refused" the
// first time it is refused.
func helperFenceWriter() int {
	var token int64
	for _, kv := range strings.Split(os.Getenv("GOVERNOR_TOKEN"), ",") {
		if _, v, ok := strings.Cut(kv, "="); ok {
			token, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	if token == 0 {
		fmt.Fprintln(os.Stderr, "no GOVERNOR_TOKEN:", os.Getenv("GOVERNOR_TOKEN"))
		return 2
	}
	d, err := time.ParseDuration(os.Getenv("DURATION"))
	if err != nil {
		return helperFailed(err)
	}
	fc, err := dialFence()
	if err != nil {
		return helperFailed(err)
	}
	who := os.Getenv("WHO")
	fmt.Printf("token %d\n", token)
	refused := false
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		ok, err := fc.write(token, who, monoNow())
		if err != nil {
			return helperFailed(err)
		}
		if !ok && !refused {
			refused = true
			fmt.Println("refused")
		}
	}
	return 0
}

// helperChurn runs N goroutines that each take one slot of RES (limit
// LIMIT, Wait mode) over and over, hold it HOLD (randomised ±50%), and
// release it, until the file STOP exists; then each finishes the acquire
// it is in (it must be served) and the process prints "served I COUNT
// LONGEST" for each goroutine, LONGEST its longest wait in seconds. Every
// grant and release is logged to OUT as "S WHO MONO" and "E WHO MONO",
// one write per line.
//
// An acquire fails after 10 minutes. A FIFO queue of 500 goroutines goes
// round in about 4 s on the idle 2-core machine; two CI runs at once
// (load 40) slowed it past the 90 s this bound was, and every goroutine
// failed at once. The bound is how long a waiter may wait before the
// test calls it never served, not a speed.
func helperChurn() int {
	n, _ := strconv.Atoi(os.Getenv("N"))
	limit, _ := strconv.Atoi(os.Getenv("LIMIT"))
	hold, _ := time.ParseDuration(os.Getenv("HOLD"))
	// The dead are reclaimed by the same-host proof, not by expiry: a
	// long TTL costs nothing and keeps a loaded machine from losing
	// leases.
	g, err := helperGovernor(5*time.Second, 2*time.Second)
	if err != nil {
		return helperFailed(err)
	}
	f, err := os.OpenFile(os.Getenv("OUT"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return helperFailed(err)
	}
	stop := os.Getenv("STOP")
	stopped := func() bool { _, err := os.Stat(stop); return err == nil }
	who := os.Getenv("WHO")
	counts := make([]int, n)
	longest := make([]time.Duration, n)
	failed := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			id := fmt.Sprintf("%s.%d", who, i)
			for first := true; first || !stopped(); first = false {
				asked := time.Now()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
				l, err := g.Acquire(ctx, os.Getenv("RES"), governor.AcquireOptions{Limit: limit, Mode: governor.Wait})
				cancel()
				longest[i] = max(longest[i], time.Since(asked))
				if err != nil {
					failed <- fmt.Errorf("%s: acquire: %w", id, err)
					return
				}
				fmt.Fprintf(f, "S %s %d\n", id, monoNow())
				time.Sleep(time.Duration(float64(hold) * (0.5 + rand.Float64())))
				fmt.Fprintf(f, "E %s %d\n", id, monoNow())
				if err := l.Release(); err != nil {
					failed <- fmt.Errorf("%s: release: %w", id, err)
					return
				}
				counts[i]++
			}
		})
	}
	fmt.Println("started")
	wg.Wait()
	close(failed)
	code := 0
	for err := range failed {
		fmt.Fprintln(os.Stderr, err)
		code = 3
	}
	for i, c := range counts {
		fmt.Printf("served %d %d %.3f\n", i, c, longest[i].Seconds())
	}
	if err := g.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "close:", err)
		code = 3
	}
	return code
}

// helperCmd returns the test binary as a helper in mode, with env added.
func helperCmd(t testing.TB, mode string, env ...string) *exec.Cmd {
	c := exec.Command(os.Args[0])
	c.Env = append(append(os.Environ(), helperEnv+"="+mode), env...)
	c.Stderr = os.Stderr
	return c
}

// lines reads a helper's stdout into a channel.
func lines(t testing.TB, c *exec.Cmd) <-chan string {
	t.Helper()
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan string, 1024)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			ch <- sc.Text()
		}
	}()
	return ch
}

// expectLine waits up to d for a line starting with prefix, returning it.
func expectLine(t testing.TB, ch <-chan string, prefix string, d time.Duration) string {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case l, ok := <-ch:
			if !ok {
				t.Fatalf("helper ended before printing %q", prefix)
			}
			if strings.HasPrefix(l, prefix) {
				return l
			}
		case <-timer.C:
			t.Fatalf("helper did not print %q within %v", prefix, d)
		}
	}
}
