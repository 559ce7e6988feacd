package faults_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/redistest"
)

// Scenario 5: 100 waiters in 4 processes (25 goroutines each) — with
// GOVERNOR_FAULTS_FULL=1, as .ci/run sets, 500 waiters in 5 processes —
// take one slot of a limit-3 resource over and over for about 15s (60s
// in full), while victim processes (10 goroutines each, holding and
// waiting on the same resource) are SIGKILLed at random and replaced.
// Every surviving waiter is served (each finishes the acquire it is in
// when told to stop), the spans of all processes — a killed one's open
// span ending at its kill — never carry more than 3, and once everyone is
// gone the resource is empty and its counters balance: every grant was
// released or reclaimed.
func TestManyWaitersWithKills(t *testing.T) {
	s := redistest.Start(t)
	project := uniq("churn")
	const limit, perVictim = 3, 10
	survivors, perSurvivor, churn := 4, 25, 15*time.Second
	if os.Getenv("GOVERNOR_FAULTS_FULL") == "1" {
		survivors, perSurvivor, churn = 5, 100, 60*time.Second
	}
	dir := t.TempDir()
	stop := filepath.Join(dir, "stop")
	common := []string{"REDIS_ADDR=" + s.Addr, "PROJECT=" + project, "RES=pool", "LIMIT=3", "STOP=" + stop}

	type proc struct {
		c      *exec.Cmd
		out    <-chan string
		file   string
		killAt int64 // 0: not killed
	}
	start := func(who string, n int, hold string) *proc {
		p := &proc{file: filepath.Join(dir, who)}
		p.c = helperCmd(t, "churn", append(common, "WHO="+who, fmt.Sprintf("N=%d", n), "HOLD="+hold, "OUT="+p.file)...)
		p.out = lines(t, p.c)
		if err := p.c.Start(); err != nil {
			t.Fatal(err)
		}
		killAtCleanup(t, p.c)
		return p
	}
	var surv, victims []*proc
	for i := range survivors {
		surv = append(surv, start(fmt.Sprintf("s%d", i), perSurvivor, "20ms"))
	}
	for _, p := range surv {
		expectLine(t, p.out, "started", 60*time.Second)
	}
	var live []*proc
	for i := range 2 {
		p := start(fmt.Sprintf("v%d", i), perVictim, "100ms")
		live = append(live, p)
		victims = append(victims, p)
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	kills := 0
	for end := time.Now().Add(churn); time.Now().Before(end); {
		time.Sleep(time.Duration(300+rng.IntN(700)) * time.Millisecond)
		i := rng.IntN(len(live))
		p := live[i]
		_ = p.c.Process.Signal(syscall.SIGKILL)
		p.killAt = monoNow()
		_ = p.c.Wait()
		kills++
		np := start(fmt.Sprintf("v%d", len(victims)), perVictim, "100ms")
		victims = append(victims, np)
		live[i] = np
	}
	for _, p := range live {
		_ = p.c.Process.Signal(syscall.SIGKILL)
		p.killAt = monoNow()
		_ = p.c.Wait()
	}
	if err := os.WriteFile(stop, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	servedAll := 0
	var longest float64 // seconds
	for i, p := range surv {
		done := make(chan error, 1)
		go func() { done <- p.c.Wait() }()
		var err error
		select {
		case err = <-done:
		case <-time.After(11 * time.Minute): // past the helper's own 10-minute bound on an acquire
			t.Fatalf("survivor %d did not finish: some waiter was never served", i)
		}
		if err != nil {
			t.Fatalf("survivor %d: %v", i, err)
		}
		for l := range p.out {
			var g, n int
			var wait float64
			if _, err := fmt.Sscanf(l, "served %d %d %g", &g, &n, &wait); err == nil {
				longest = max(longest, wait)
				if n == 0 {
					t.Errorf("survivor %d goroutine %d never served", i, g)
				}
				servedAll++
			}
		}
	}
	if servedAll != survivors*perSurvivor {
		t.Fatalf("%d survivors reported, want %d", servedAll, survivors*perSurvivor)
	}

	var spans []span
	grants := 0
	for _, p := range append(surv, victims...) {
		f, err := os.Open(p.file)
		if os.IsNotExist(err) {
			continue // killed before its first grant
		}
		if err != nil {
			t.Fatal(err)
		}
		open := map[string]int64{}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var kind, who string
			var at int64
			if _, err := fmt.Sscanf(sc.Text(), "%s %s %d", &kind, &who, &at); err != nil {
				// A victim killed mid-write may leave a partial last line.
				if p.killAt != 0 {
					continue
				}
				t.Fatalf("%s: bad line %q", p.file, sc.Text())
			}
			switch kind {
			case "S":
				open[who] = at
				grants++
			case "E":
				spans = append(spans, span{start: open[who], end: at, weight: 1, who: who})
				delete(open, who)
			}
		}
		f.Close()
		for who, at := range open {
			if p.killAt == 0 {
				t.Fatalf("%s: span of %s never ended", p.file, who)
			}
			spans = append(spans, span{start: at, end: p.killAt, weight: 1, who: who})
		}
	}
	peak := checkSpans(t, spans, limit)

	// Status only reads; a call that writes prunes what the killed left
	// behind. Then every grant is accounted for.
	g := newGovernor(t, s.Addr, governor.Options{Project: project, TTL: 2 * time.Second})
	var st governor.Status
	eventually(t, 30*time.Second, "the resource free after everyone left", func() bool {
		l, err := g.Acquire(context.Background(), "pool", governor.AcquireOptions{Limit: limit, Weight: limit})
		if err != nil {
			return false
		}
		if err := l.Release(); err != nil {
			t.Fatal(err)
		}
		st, err = g.Status(context.Background(), "pool")
		if err != nil {
			t.Fatal(err)
		}
		return len(st.Holders) == 0 && len(st.Waiters) == 0
	})
	c := st.Counters
	t.Logf("%d grants seen by the workers, peak %d of %d, %d victims killed, longest wait of a survivor %.1fs; counters %+v",
		grants, peak, limit, kills, longest, c)
	if c.Acquired != c.Released+c.ReclaimedExpiry+c.ReclaimedDead+c.Takeovers {
		t.Fatalf("grants leaked: %d acquired, %d released, %d reclaimed (expiry), %d reclaimed (dead), %d taken over",
			c.Acquired, c.Released, c.ReclaimedExpiry, c.ReclaimedDead, c.Takeovers)
	}
	if int(c.Acquired) < grants {
		t.Fatalf("backend counted %d grants, the workers saw %d", c.Acquired, grants)
	}
}
