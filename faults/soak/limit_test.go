//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLimitLogAdmin: the limit in force the soak checks the heavy spans
// against, as its admin `limit` commands and Redis's losses of data
// leave it. A loss while a command ran may come after its change and
// undo it (the 1 h soak of seed 303 saw two runs at once under a live
// limit of 1 it believed in force: `limit heavy 1` applied, then a
// FLUSHALL while the command still read the status back, and exit 0):
// from the loss on, the larger of the command's limit and the
// configured one.
func TestLimitLogAdmin(t *testing.T) {
	const conf = 2
	s := int64(time.Second)
	later := func(at int64) int64 { return at + 30*s } // past any window
	cases := []struct {
		name   string
		n      int
		ok     bool
		wipeAt int64 // 0: none
		at     int64 // when to ask
		want   int
	}{
		{name: "lowered", n: 1, ok: true, at: later(20 * s), want: 1},
		{name: "raised, from its start", n: 3, ok: true, at: 11 * s, want: 3},
		{name: "failed lowering", n: 1, ok: false, at: later(20 * s), want: conf},
		{name: "failed raise", n: 3, ok: false, at: 11 * s, want: 3},
		{name: "lowered, a loss while it ran", n: 1, ok: true, wipeAt: 15 * s, at: later(20 * s), want: conf},
		{name: "lowered, a loss before it", n: 1, ok: true, wipeAt: 5 * s, at: later(20 * s), want: 1},
		{name: "lowered, a loss after it", n: 1, ok: true, wipeAt: 25 * s, at: later(25 * s), want: conf},
		{name: "failed raise, a loss while it ran", n: 3, ok: false, wipeAt: 15 * s, at: 16 * s, want: 3},
		{name: "failed raise, a loss while it ran, later", n: 3, ok: false, wipeAt: 15 * s, at: later(20 * s), want: 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var l limitLog
			l.set(resHeavy, conf, 0)
			// Losses are noted as they come: before the command's
			// return when they came while it ran.
			if c.wipeAt > 0 && c.wipeAt <= 20*s {
				l.wiped(resHeavy, conf, c.wipeAt)
			}
			l.admin(resHeavy, c.n, conf, 10*s, 20*s, c.ok)
			if c.wipeAt > 20*s {
				l.wiped(resHeavy, conf, c.wipeAt)
			}
			if got := l.allowed(resHeavy, c.at, 0); got != c.want {
				t.Errorf("limit in force at %v: %d, want %d", time.Duration(c.at), got, c.want)
			}
		})
	}
}

// TestCheckLimitCountsPastTheCap: the report lists five uses above the
// limit in force, then how many more and the last: how long it lasted
// tells a holder past its lease from a limit in force misread.
func TestCheckLimitCountsPastTheCap(t *testing.T) {
	s := &soak{work: t.TempDir()}
	s.limits.set(resHeavy, 1, 0)
	var b strings.Builder
	ms := int64(time.Millisecond)
	for i := int64(0); i < 8; i++ { // two 20 ms chunks at once, 8 times
		at := 1000*ms + i*20*ms
		fmt.Fprintf(&b, "a %d %d\nb %d %d\n", at, at+20*ms, at+ms, at+21*ms)
	}
	if err := os.WriteFile(filepath.Join(s.work, resHeavy+"-run0.spans"), []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	s.checkLimit(resHeavy)
	if len(s.violations) != 6 || !strings.Contains(s.violations[5], "heavy: 10 more starts above the limit in force after those five, the last at 1.141s") {
		t.Errorf("violations: %q", s.violations)
	}
}
