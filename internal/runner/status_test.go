package runner

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/proctest"
)

func TestRenderStatus(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	r := governor.Result{Outcome: governor.Queued, Position: 2, Status: governor.Status{
		Limit: 1, Used: 1, Now: now,
		Holders: []governor.Holder{
			{LeaseID: "x", AcquiredAt: now.Add(-75 * time.Second), Declaration: governor.Declaration{Session: "agent-7", Host: "box", PID: 42}},
			{LeaseID: "y"},
		},
	}}
	got := renderStatus("heavy", r, "~40s (from the last 50 holds)", 12*time.Second)
	want := "governor: waiting for heavy, 2nd in queue, expected wait ~40s (from the last 50 holds), 1 of 1 in use; held by agent-7 (pid 42 on box, for 1m15s) and 1 more; waited 12s"
	if got != want {
		t.Fatalf("renderStatus =\n%q, want\n%q", got, want)
	}
	if got := renderStatus("heavy", r, "", 12*time.Second); strings.Contains(got, "expected") {
		t.Fatalf("renderStatus without an estimate = %q", got)
	}
	for n, want := range map[int]string{1: "1st", 2: "2nd", 3: "3rd", 4: "4th", 11: "11th", 12: "12th", 13: "13th", 21: "21st", 112: "112th"} {
		if got := ordinal(n); got != want {
			t.Errorf("ordinal(%d) = %s, want %s", n, got, want)
		}
	}
	if got := truncateRunes("héllo world", 5); got != "héll…" {
		t.Errorf("truncateRunes = %q", got)
	}
}

func TestStatusLineRewritesInPlaceAndErases(t *testing.T) {
	var buf proctest.SyncBuffer
	sl := newStatusLine(&buf, func() int { return 40 })
	sl.update("heavy", governor.Result{Position: 1}, estimate{})
	sl.update("heavy", governor.Result{Position: 1, Status: governor.Status{Limit: 1, Used: 1}}, estimate{})
	sl.close()
	out := buf.String()
	if strings.Contains(out, "\n") {
		t.Fatalf("status line wrote a newline: %q", out)
	}
	parts := strings.Split(out, "\r\x1b[K")
	if len(parts) != 4 || parts[3] != "" {
		t.Fatalf("want two draws and an erase, each after CR and erase-line: %q", out)
	}
	for _, p := range parts[1:3] {
		if len([]rune(p)) > 39 || !strings.HasPrefix(p, "governor: waiting for heavy") {
			t.Fatalf("draw %q: want at most 39 columns (terminal of 40)", p)
		}
	}
}

func TestNoStatusLineOffTerminal(t *testing.T) {
	if _, ok := terminal(&bytes.Buffer{}); ok {
		t.Fatal("a buffer is a terminal")
	}
	f, err := openRecord(t.TempDir() + "/f")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, ok := terminal(f); ok {
		t.Fatal("a regular file is a terminal")
	}
}

// Between moves of the queue the expected wait counts down: the holder
// has held longer. A holder 8s into a 10s mean hold leaves ~2s; drawn a
// second later, ~1s.
func TestStatusLineExpectedWaitTicks(t *testing.T) {
	read := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	st := governor.Status{Limit: 1, Used: 1, Now: read,
		Holders: []governor.Holder{{Weight: 1, AcquiredAt: read.Add(-8 * time.Second)}},
		Holds:   []time.Duration{10 * time.Second}}
	e := estimate{st: &st, place: 1, at: read}
	st.Waiters = []governor.Waiter{{ID: "me", Weight: 1}}
	for _, tc := range []struct {
		after time.Duration
		want  string
	}{
		{0, "~2s (from the last 1 hold)"},
		{time.Second, "~1s (from the last 1 hold)"},
		{3 * time.Second, "any moment (holders past the mean hold of 10s, from the last 1 hold)"},
	} {
		if got := e.text(read.Add(tc.after)); got != tc.want {
			t.Errorf("%v after the read: %q; want %q", tc.after, got, tc.want)
		}
	}
	if got := (estimate{}).text(read); got != "" {
		t.Errorf("unknown: %q; want empty", got)
	}
}
