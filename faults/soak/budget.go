//go:build linux

package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The budget loops: `governor run --provider budgeted --cost 1` runs
// (budgetLoop) and the Python and TypeScript clients' gates with an
// estimate of 1 (client.py, client.mjs) spend 1 USD each on a budget of budgetLimit USD per
// budgetPer, whose windows open and close while Redis loses its data.
// Each admitted call appends its start (wall clock, ns) to the budget
// log before its work; checkBudget then checks that no window admitted
// more than the limit: spent + reserved, as the soak counts them, at
// or below the limit at every instant, before and after each loss (a
// wiped budget is held until its window ends: docs/budgets.md).
const (
	budgetName     = "soak-window"
	budgetProvider = "budgeted"
	budgetLimit    = 4
	budgetPer      = 20 * time.Second
	// budgetSlack: a call that starts this soon after a window opened
	// may have reserved in the one before.
	budgetSlack = 2 * time.Second
)

// budgetConfig is the budget's configuration (under budgets:).
func budgetConfig() string {
	return fmt.Sprintf("budgets:\n  %s: {limit: %d, unit: USD, per: %s, providers: [%s]}\n", budgetName, budgetLimit, budgetPer, budgetProvider)
}

func (s *soak) budgetLog() string { return filepath.Join(s.work, "budget.log") }

// budgetLoop runs a charged run over and over, refused while the budget
// is exhausted or held.
func (s *soak) budgetLoop(ctx context.Context) {
	for ctx.Err() == nil {
		c := s.gov(context.Background(), "run", "--provider", budgetProvider, "--cost", "1", "--if-busy", "fail", "--",
			"sh", "-c", `date +%s%N >>"$1"; sleep 0.2`, "sh", s.budgetLog())
		var stderr strings.Builder
		c.Stderr = &stderr
		if err := c.Start(); err != nil {
			s.violate("start", "governor run --cost: %v", err)
			return
		}
		s.track(c.Process.Pid, "governor run --cost")
		err := c.Wait()
		s.untrack(c.Process.Pid)
		s.exitOf("budget run", c, err, stderr.String())
		if !sleepCtx(ctx, time.Duration(100+s.intn(300))*time.Millisecond) {
			return
		}
	}
}

// checkBudget reads the budget log and checks every window, each call
// that started within budgetSlack of its window's start counted in the
// window before while that one has room (it may have reserved there).
// It returns the number of calls read.
func (s *soak) checkBudget() int {
	f, err := os.Open(s.budgetLog())
	if err != nil {
		return 0
	}
	defer f.Close()
	per := budgetPer.Nanoseconds()
	count := map[int64]int{}     // window -> calls surely in it
	ambiguous := map[int64]int{} // window -> calls that may be in the one before
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		at, err := strconv.ParseInt(strings.TrimSpace(sc.Text()), 10, 64)
		if err != nil {
			continue // a line cut by a kill
		}
		n++
		w := at / per
		if at-w*per < budgetSlack.Nanoseconds() {
			ambiguous[w]++
		} else {
			count[w]++
		}
	}
	var windows []int64
	for w := range count {
		windows = append(windows, w)
	}
	for w := range ambiguous {
		if _, ok := count[w]; !ok {
			windows = append(windows, w)
		}
	}
	slices.Sort(windows)
	for _, w := range windows {
		moved := min(ambiguous[w], max(0, budgetLimit-count[w-1]))
		count[w-1] += moved
		count[w] += ambiguous[w] - moved
	}
	for _, w := range windows {
		if count[w] > budgetLimit {
			start := time.Unix(0, w*per).UTC().Format("15:04:05")
			s.violate("budget", "%s: %d calls of 1 USD admitted in the window from %s (limit %d USD per %v)", budgetName, count[w], start,
				budgetLimit, budgetPer)
		}
		s.worstAt("largest spend in a window of "+budgetName+" (limit "+strconv.Itoa(budgetLimit)+")", float64(count[w]))
	}
	return n
}
