package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
)

var update = flag.Bool("update", false, "rewrite golden files")

// fixedState is a resource with two holders, a waiter, drift, a live
// limit and hold history, a paused one, and a third, read at a fixed
// instant.
func fixedState() []governor.Status {
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	return []governor.Status{{
		Key: governor.Key{Project: "prj-0001", Resource: "provider:anthropic"}, Limit: 2, Used: 2, DriftLimit: 3, Now: now,
		Holders: []governor.Holder{
			{LeaseID: "4f1c0e2a9b7d3c5e8f6a1b2c3d4e5f60", Weight: 1, Token: 1793000000000001,
				AcquiredAt: now.Add(-12 * time.Second), Heartbeat: now.Add(-2 * time.Second), Expires: now.Add(28 * time.Second),
				Declaration: governor.Declaration{Session: "conductor-A", Host: "box1", PID: 4242, Command: "eval run --api-key ***"}},
			{LeaseID: "9a8b7c6d5e4f30211203f4e5d6c7b8a9", Weight: 1, Token: 1793000000000002,
				AcquiredAt: now.Add(-3*time.Minute - 4*time.Second), Heartbeat: now.Add(-9 * time.Second), Expires: now.Add(21 * time.Second),
				Declaration: governor.Declaration{Session: "conductor-B", Host: "box2", PID: 77}},
		},
		Waiters: []governor.Waiter{{ID: "0badc0ffee0badc0ffee0badc0ffee00", Weight: 2, EnqueuedAt: now.Add(-45 * time.Second),
			Declaration: governor.Declaration{Session: "nightly", Host: "box1", PID: 5150, Command: "nightly-eval --token ***"}}},
		Counters:  governor.Counters{Acquired: 10, Busy: 3, Waited: 4, Released: 8, ReclaimedExpiry: 1},
		Holds:     []time.Duration{40 * time.Second, 20 * time.Second, 30 * time.Second},
		LiveLimit: &governor.LiveLimit{Limit: 2, By: "ops-oncall", At: now.Add(-5 * time.Minute)},
	}, {
		Key: governor.Key{Project: "prj-0001", Resource: "heavy"}, Limit: 1, Used: 1, Now: now,
		Paused: &governor.Paused{Since: now.Add(-2 * time.Minute), By: "alice"},
		Holders: []governor.Holder{ // a governor run on another host: its command is not looked up
			{LeaseID: "5e4f30211203f4e5d6c7b8a99a8b7c6d", Weight: 1, Token: 1793000000000003,
				AcquiredAt: now.Add(-time.Minute), Heartbeat: now.Add(-time.Second), Expires: now.Add(29 * time.Second),
				Progress:    now.Add(-40 * time.Second),
				Declaration: governor.Declaration{Session: "box2:900", Host: "box2", HostID: "elsewhere", PID: 907, GovernorPID: 900, Command: "make heavy", ProgressTimeout: 5 * time.Minute}}},
	}, {
		Key: governor.Key{Project: "prj-0001", Resource: "issue:2316"}, Limit: 1, Used: 1, Now: now,
		Holders: []governor.Holder{ // governor acquire without --pid
			{LeaseID: "c7b8a99a8b7c6d5e4f30211203f4e5d6", Weight: 1, Token: 1793000000000004,
				AcquiredAt: now.Add(-2 * time.Minute), Heartbeat: now.Add(-2 * time.Minute), Expires: now.Add(8 * time.Minute),
				Declaration: governor.Declaration{Session: "fix-2316", Host: "box1", Command: "governor acquire issue:2316"}}},
	}}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

func TestSlotsGolden(t *testing.T) {
	var human bytes.Buffer
	writeSlots(&human, "prj-0001", fixedState(), nil)
	golden(t, "slots.txt", human.Bytes())
	var js bytes.Buffer
	if err := writeJSON(&js, toSlotsJSON("prj-0001", fixedState(), nil)); err != nil {
		t.Fatal(err)
	}
	golden(t, "slots.json", js.Bytes())
}

// A named resource that is neither configured nor has state is an error
// naming the closest known names, not "limit 0 ... free 0".
func TestSlotsUnknownResource(t *testing.T) {
	tg := fileTarget(t, "  provider:anthropic: {limit: 2}\n")
	if code, _, errs := cli(t, append(tg.global(), "acquire", "gpu", "--limit", "1")...); code != 0 {
		t.Fatalf("acquire: exit %d %s", code, errs)
	}
	for _, tc := range []struct {
		names []string
		want  string
	}{
		{[]string{"nosuch"}, `resource "nosuch" is unknown in project runtest: it is not configured and has no state; known: gpu, heavy, provider:anthropic`},
		{[]string{"haevy"}, `resource "haevy" is unknown in project runtest: it is not configured and has no state; did you mean heavy?`},
		{[]string{"heavy", "gpv"}, `"gpv" is unknown`},
	} {
		code, out, errs := cli(t, append(append(tg.global(), "slots"), tc.names...)...)
		if code != ExitFailure || out != "" || !strings.Contains(errs, tc.want) {
			t.Errorf("slots %q: exit %d, stdout %q, stderr %q; want 125 and %q", tc.names, code, out, errs, tc.want)
		}
	}
	// Known resources, configured (heavy, never used) or with state (gpu).
	for _, name := range []string{"heavy", "gpu", "provider:anthropic"} {
		if code, _, errs := cli(t, append(tg.global(), "slots", name)...); code != 0 {
			t.Errorf("slots %s: exit %d %s", name, code, errs)
		}
	}
}

// slots --watch into a pipe writes no escapes: with --json one object per
// line per reading, else text blocks each opened by a "-- TIME" line.
func TestSlotsWatchIntoAPipe(t *testing.T) {
	tg := fileTarget(t, "")
	for _, asJSON := range []bool{true, false} {
		args := []string{"slots", "heavy", "--watch"}
		if asJSON {
			args = append(args, "--json")
		}
		c := tg.command(args...)
		stdout, err := c.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var errb bytes.Buffer
		c.Stderr = &errb
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(stdout)
		var got []string // three readings
		for len(got) < 3 {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("--json=%v: reading: %v (stderr %s)", asJSON, err, &errb)
			}
			if strings.ContainsRune(line, '\033') {
				t.Fatalf("--json=%v: an escape written into a pipe: %q", asJSON, line)
			}
			switch {
			case asJSON:
				var sj slotsJSON
				if err := json.Unmarshal([]byte(line), &sj); err != nil || len(sj.Resources) != 1 || sj.Resources[0].Resource != "heavy" {
					t.Fatalf("--json line %q: %v; want one slots object per line", line, err)
				}
				got = append(got, line)
			case strings.HasPrefix(line, "-- "):
				if _, err := time.Parse(time.RFC3339, strings.TrimSpace(line[3:])); err != nil {
					t.Fatalf("block header %q: %v", line, err)
				}
				got = append(got, line)
			case !strings.HasPrefix(line, "heavy  limit 1"):
				t.Fatalf("text line %q: want a block header or heavy's line", line)
			}
		}
		_ = c.Process.Signal(os.Interrupt)
		if err := c.Wait(); err != nil {
			t.Errorf("--json=%v: after INT: %v, stderr %s; want exit 0", asJSON, err, &errb)
		}
	}
}

// On a terminal, slots --watch still redraws the screen.
func TestSlotsWatchOnATerminal(t *testing.T) {
	tg := fileTarget(t, "")
	master, slave := openPTY(t)
	seen := readTerminal(master)
	c := tg.command("slots", "heavy", "--watch")
	c.Stdout = slave
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "two redraws on the terminal", func() bool {
		return strings.Count(seen(), "\033[H\033[2J") >= 2 && strings.Contains(seen(), "heavy  limit 1")
	})
	_ = c.Process.Signal(os.Interrupt)
	if err := c.Wait(); err != nil {
		t.Errorf("after INT: %v; want exit 0", err)
	}
	if strings.Contains(seen(), "-- ") {
		t.Errorf("a terminal got the pipe's block headers:\n%q", seen())
	}
}
