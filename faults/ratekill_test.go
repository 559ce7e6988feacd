package faults_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/capacity"
	"github.com/governor-dev/governor/governor/redisbackend"
	"github.com/governor-dev/governor/internal/redistest"
)

// helperRate makes calls of provider "hot" (RATE requests a minute)
// through Provider.Do, their requests taken from its process's rate
// share (Options.Capacity: lease LEASE, refresh 200ms; the Governor
// declares this process, so that its death is proven), in 4 goroutines
// until the file STOP exists. Each call logs "R WHO MONO" to OUT; it
// prints "granted" after its first.
func helperRate() int {
	rate, _ := strconv.ParseInt(os.Getenv("RATE"), 10, 64)
	lease, err := time.ParseDuration(os.Getenv("LEASE"))
	if err != nil {
		return helperFailed(err)
	}
	rdb := redis.NewClient(redisOptions(os.Getenv("REDIS_ADDR")))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := redisbackend.New(ctx, rdb)
	if err != nil {
		return helperFailed(err)
	}
	who := os.Getenv("WHO")
	g, err := governor.New(b, governor.Options{Project: os.Getenv("PROJECT"), Session: who,
		Capacity: map[string]capacity.Config{"provider:hot": {Lease: lease, Refresh: 200 * time.Millisecond}}})
	if err != nil {
		return helperFailed(err)
	}
	f, err := os.OpenFile(os.Getenv("OUT"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return helperFailed(err)
	}
	p := g.Provider("hot", governor.ProviderLimits{Requests: governor.PerMinute(rate)})
	stopped := func() bool { _, err := os.Stat(os.Getenv("STOP")); return err == nil }
	var first sync.Once
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for !stopped() {
				cctx, cancel := context.WithTimeout(context.Background(), time.Second)
				_ = p.Do(cctx, 0, func(context.Context) (int64, error) {
					mu.Lock()
					fmt.Fprintf(f, "R %s %d\n", who, monoNow())
					mu.Unlock()
					first.Do(func() { fmt.Println("granted") })
					return 0, nil
				})
				cancel() // none within a second: ask again
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

// requestTimes reads helperRate OUT files: the monotonic times of the
// calls they made, sorted.
func requestTimes(t *testing.T, paths ...string) []int64 {
	t.Helper()
	var at []int64
	for _, path := range paths {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var who string
			var mono int64
			if _, err := fmt.Sscanf(sc.Text(), "R %s %d", &who, &mono); err != nil {
				t.Fatalf("%s: bad line %q", path, sc.Text())
			}
			at = append(at, mono)
		}
		f.Close()
	}
	slices.Sort(at)
	return at
}

// TestRateShareKilledReturns (issue 44): a process taking a provider's
// requests from its rate share (lease 60s) is killed (SIGKILL); another
// process on the machine, wanting the whole limit, gets the share at
// its first refresh, since the killed one's declared pid and start time
// prove it dead, rather than once its lease has ended. In no window of
// a minute do the two make more calls than the limit's rate and burst.
func TestRateShareKilledReturns(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	project := uniq("ratekill")
	dir := t.TempDir()
	stop := filepath.Join(dir, "stop")
	const rate = 600
	procs := map[string]*exec.Cmd{}
	start := func(who string) (<-chan string, string) {
		out := filepath.Join(dir, who)
		c := helperCmd(t, "rate", "REDIS_ADDR="+s.Addr, "PROJECT="+project, "RATE="+strconv.Itoa(rate), "LEASE=60s",
			"OUT="+out, "STOP="+stop, "WHO="+who)
		lines, _ := startKilledAtCleanup(t, c)
		procs[who] = c
		return lines, out
	}
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
	// there (its share was the whole limit, given back by no one).
	expectLine(t, bOut, "granted", 30*time.Second)
	if err := os.WriteFile(stop, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := procs["b"].Wait(); err != nil {
		t.Fatalf("b: %v", err)
	}
	at := requestTimes(t, aFile, bFile)
	for i, j := 0, 0; i < len(at); i++ {
		for time.Duration(at[i]-at[j]) >= time.Minute {
			j++
		}
		if n := i - j + 1; n > 2*rate {
			t.Fatalf("%d calls in one minute, more than the rate and burst (%d)", n, 2*rate)
		}
	}
	t.Logf("%d calls", len(at))
}
