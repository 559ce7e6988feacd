//go:build linux

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// workArg is the first argument of this program's work mode: the
// protected work of a run or a shell lease, which appends "WHO START
// END" (CLOCK_MONOTONIC ns) to OUT for every 20 ms it works, one write
// per line, for DURATION.
const workArg = "work"

func work(args []string) int {
	if len(args) != 3 {
		fmt.Fprintln(os.Stderr, "soak work: want OUT DURATION WHO")
		return 2
	}
	d, err := time.ParseDuration(args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak work:", err)
		return 2
	}
	f, err := os.OpenFile(args[0], os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak work:", err)
		return 2
	}
	for end := time.Now().Add(d); time.Now().Before(end); {
		start := mono()
		time.Sleep(20 * time.Millisecond)
		fmt.Fprintf(f, "%s %d %d\n", args[2], start, mono())
	}
	return 0
}

// mono reads CLOCK_MONOTONIC in ns: the clock the work spans use, which
// Python's time.monotonic_ns and Node's process.hrtime read too.
func mono() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

type span struct {
	start, end int64
	who        string
}

// readSpans reads every span file of resource res in dir (RES-*.spans).
func readSpans(dir, res string) []span {
	files, _ := filepath.Glob(filepath.Join(dir, res+"-*.spans"))
	var out []span
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) != 3 {
				continue // a line cut by a kill
			}
			st, err1 := strconv.ParseInt(f[1], 10, 64)
			en, err2 := strconv.ParseInt(f[2], 10, 64)
			if err1 != nil || err2 != nil || en < st {
				continue
			}
			out = append(out, span{start: st, end: en, who: f[0]})
		}
	}
	return out
}

// limitLog is each resource's limit in force over time (CLOCK_MONOTONIC).
type limitLog struct {
	mu    sync.Mutex
	byR   map[string][]limitAt
	wipes map[string][]int64 // when Redis lost each resource's data, its live limit with it
}

type limitAt struct {
	at    int64
	limit int
}

func (l *limitLog) set(res string, limit int, at int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.setLocked(res, limit, at)
}

func (l *limitLog) setLocked(res string, limit int, at int64) {
	if l.byR == nil {
		l.byR = map[string][]limitAt{}
	}
	// In time order: a change noted late (a raise, at its command's
	// start) goes before the later ones.
	ch := append(l.byR[res], limitAt{at: at, limit: limit})
	sort.SliceStable(ch, func(i, j int) bool { return ch[i].at < ch[j].at })
	l.byR[res] = ch
}

// allowed is the largest limit in force at any time in [t-window, t]:
// a limit lowered live keeps its holders (nothing new is granted until
// the use falls under it), so the use may stay above the new limit for
// as long as a holder granted before can hold.
func (l *limitLog) allowed(res string, t int64, window time.Duration) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.allowedLocked(res, t, window)
}

func (l *limitLog) allowedLocked(res string, t int64, window time.Duration) int {
	ch := l.byR[res]
	from := t - window.Nanoseconds()
	best := 0
	for i, c := range ch {
		inForceUntil := int64(1<<62 - 1)
		if i+1 < len(ch) {
			inForceUntil = ch[i+1].at
		}
		if c.at <= t && inForceUntil >= from && c.limit > best {
			best = c.limit
		}
	}
	return best
}

// wiped notes that Redis lost res's data at at (noted before the loss):
// its live limit went with it, configured is in force again.
func (l *limitLog) wiped(res string, configured int, at int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.setLocked(res, configured, at)
	if l.wipes == nil {
		l.wipes = map[string][]int64{}
	}
	l.wipes[res] = append(l.wipes[res], at)
}

// admin notes an admin `limit` of res to n (configured for --clear) run
// from before to at; ok when it exited 0. A raise takes effect before
// the command returns, a lowering at the latest when it returns. A loss
// of Redis's data while it ran may have come before its change or after
// it, undoing it even when it exited 0 (the change applied, then the
// command's status read): from the loss on, the larger of n and the
// configured limit, noted after the loss's own entry.
func (l *limitLog) admin(res string, n, configured int, before, at int64, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	prev := l.allowedLocked(res, before, 0)
	after := n
	for _, w := range l.wipes[res] {
		if w >= before && w <= at {
			after = max(n, configured)
			l.setLocked(res, after, w)
			break
		}
	}
	if !ok {
		// Unknown whether it took effect: the larger of both from now on.
		l.setLocked(res, max(n, prev), before)
		return
	}
	if n > prev {
		l.setLocked(res, n, before)
	}
	l.setLocked(res, after, at)
}

// overlapWindow is how long a holder granted under a limit may work on
// after the limit was lowered: its work (at most 6 s) plus its lease's
// TTL (its governor stopped) plus slack.
const overlapWindow = 6*time.Second + leaseTTL + 2*time.Second

// checkLimit checks that the spans of res never sum above the limit in
// force; it returns the number of points checked and the largest use.
func (s *soak) checkLimit(res string) (int, int) {
	spans := readSpans(s.work, res)
	type edge struct {
		at    int64
		delta int
		sp    span
	}
	edges := make([]edge, 0, 2*len(spans))
	for _, sp := range spans {
		edges = append(edges, edge{sp.start, 1, sp}, edge{sp.end, -1, sp})
	}
	sort.Slice(edges, func(i, j int) bool {
		if edges[i].at != edges[j].at {
			return edges[i].at < edges[j].at
		}
		return edges[i].delta < edges[j].delta // an end before a start at the same instant
	})
	use, worst, reported, more, last := 0, 0, 0, 0, int64(0)
	open := map[span]bool{}
	for _, e := range edges {
		use += e.delta
		if e.delta > 0 {
			open[e.sp] = true
		} else {
			delete(open, e.sp)
		}
		if use > worst {
			worst = use
		}
		if e.delta > 0 {
			lim := s.limits.allowed(res, e.at, overlapWindow)
			if use <= lim {
				continue
			}
			if reported >= 5 {
				more, last = more+1, e.at
				continue
			}
			reported++
			// After a loss of Redis's data too: every process of the
			// soak's machine shares its witness (docs/redis.md).
			after := ""
			if loss, ok := s.afterLoss(e.at); ok {
				after = fmt.Sprintf(", %.3fs after a loss of Redis's data at %.3fs", float64(e.at-loss)/1e9, s.rel(loss))
			}
			s.violate("limit", "%s: use %d above the limit in force %d at %.3fs%s: %s", res, use, lim, s.rel(e.at), after, spansText(s, open))
		}
	}
	if more > 0 {
		// How long it lasted tells a holder past its lease from a limit
		// in force misread.
		s.violate("limit", "%s: %d more starts above the limit in force after those five, the last at %.3fs", res, more, s.rel(last))
	}
	return len(spans), worst
}

// spansText names the open spans, sorted, for a report.
func spansText(s *soak, open map[span]bool) string {
	var who []string
	for sp := range open {
		who = append(who, fmt.Sprintf("%s[%.3fs..%.3fs]", sp.who, s.rel(sp.start), s.rel(sp.end)))
	}
	sort.Strings(who)
	return strings.Join(who, " ")
}

// rel is a CLOCK_MONOTONIC reading in seconds since the soak started.
func (s *soak) rel(ns int64) float64 { return float64(ns-s.monoStart()) / 1e9 }

// checkWays checks that every way in the soak started held a slot at
// least once: its processes wrote spans (files RES-WHO.spans, WHO from
// the loop's prefix). A way that never did tested nothing, and the
// invariants above pass on it vacuously: a client that could not load its
// module (the TypeScript client run from a copy of the tree without its
// package.json exited 1 at once, two minutes long) is a failure, with
// the first such exit's stderr as its evidence.
func (s *soak) checkWays() {
	ways := []struct{ what, way, glob, sample string }{
		{"governor run loops", "", resHeavy + "-run*.spans", "run exit"},
		{"governor run loop of " + resProvider + " (central)", "", resProvider + "-run*.spans", "run exit"},
		{"shell loops", "", resShell + "-shell*.spans", "shell loop exit"},
		{"python client", "", "*-py*.spans", "python client exit"},
		{"python client's shares of " + resProvider, "python client", resProvider + "-py*.spans", "python client exit"},
		{"typescript client", "", "*-ts*.spans", "typescript client exit"},
		{"typescript client's shares of " + resProvider, "typescript client", resProvider + "-ts*.spans", "typescript client exit"},
		{"Go Hold process's shares of " + resProvider, "", resProvider + "-go*.spans", "go hold exit"},
	}
	for _, w := range ways {
		if w.way == "" {
			w.way = w.what
		}
		s.mu.Lock()
		_, skipped := s.skipped[w.way]
		s.mu.Unlock()
		if skipped || w.way == "shell loops" && s.o.shells == 0 {
			continue
		}
		files, _ := filepath.Glob(filepath.Join(s.work, w.glob))
		n := 0
		for _, p := range files {
			if st, err := os.Stat(p); err == nil && st.Size() > 0 {
				n++
			}
		}
		s.check("every way in held a slot", 1)
		if n == 0 {
			s.violate("every way in held a slot", "the %s never held one in %v (no spans in %s): %s",
				w.what, s.o.duration, w.glob, s.firstSample(w.sample))
		}
	}
}

// firstSample is the stderr kept of the first exit whose kind starts
// with prefix ("typescript client exit"), or says there was none.
func (s *soak) firstSample(prefix string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	kinds := make([]string, 0, len(s.samples))
	for k := range s.samples {
		if strings.HasPrefix(k, prefix) {
			kinds = append(kinds, k)
		}
	}
	if len(kinds) == 0 {
		return "no failed exit was kept"
	}
	sort.Strings(kinds)
	return kinds[0] + ": " + s.samples[kinds[0]]
}
