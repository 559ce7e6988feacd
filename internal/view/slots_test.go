package view_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/safetext/safetexttest"
	"github.com/governor-dev/governor/internal/view"
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
	view.WriteSlots(&human, "prj-0001", fixedState(), nil, nil, nil, nil)
	golden(t, "slots.txt", human.Bytes())
	var js bytes.Buffer
	if err := view.WriteJSON(&js, view.SlotsOf("prj-0001", fixedState(), nil)); err != nil {
		t.Fatal(err)
	}
	golden(t, "slots.json", js.Bytes())
}

// slots prints what other processes declared escaped, in text and JSON;
// JSON keeps the data.
func TestSlotsEscapesHostileDeclarations(t *testing.T) {
	sts := fixedState()
	h := &sts[0].Holders[0]
	h.Session, h.Host, h.Command, h.LeaseID = safetexttest.Hostile, safetexttest.Hostile, safetexttest.Hostile, "id"+safetexttest.Hostile
	w := &sts[0].Waiters[0]
	w.Session, w.Host, w.ID = safetexttest.Hostile, safetexttest.Hostile, safetexttest.Hostile
	sts[0].Key.Resource = "r" + safetexttest.Hostile

	var text bytes.Buffer
	view.WriteSlots(&text, "p", sts, nil, nil, nil, nil)
	safetexttest.Check(t, "slots", text.String())
	if !strings.Contains(text.String(), `evil\x1b]0;pwned\x07\x1b[2J\u009b31m\u202eRTL\nFAKE LINE\rOVER\xff`) {
		t.Errorf("slots does not show the escaped session:\n%s", text.String())
	}

	var js bytes.Buffer
	if err := view.WriteJSON(&js, view.SlotsOf("p", sts, nil)); err != nil {
		t.Fatal(err)
	}
	safetexttest.Check(t, "slots --json", js.String())
	var back view.Slots
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	// encoding/json turns the invalid byte into U+FFFD, and keeps the rest.
	if want := strings.ToValidUTF8(safetexttest.Hostile, "\uFFFD"); back.Resources[0].Holders[0].Session != want {
		t.Errorf("--json session = %q, want %q", back.Resources[0].Holders[0].Session, want)
	}
}

// A holder cancelled in progress is shown as such (text and JSON) while
// it is held until its work stops.
func TestSlotsCancelledHolder(t *testing.T) {
	st := fixedState()[2]
	st.Holders[0].Cancelled = st.Now.Add(-3 * time.Second)
	var human bytes.Buffer
	view.WriteSlots(&human, "prj-0001", []governor.Status{st}, nil, nil, nil, nil)
	if want := "c7b8a99a8b7c6d5e4f30211203f4e5d6: cancelled in progress 3s ago; held until its work has stopped and it is released"; !strings.Contains(human.String(), want) {
		t.Fatalf("slots:\n%s\nwant a line %q", human.String(), want)
	}
	var js bytes.Buffer
	if err := view.WriteJSON(&js, view.SlotsOf("prj-0001", []governor.Status{st}, nil)); err != nil {
		t.Fatal(err)
	}
	if want := `"cancelled_at": "2026-11-01T11:59:57Z"`; !strings.Contains(js.String(), want) {
		t.Fatalf("slots --json:\n%s\nwant %s", js.String(), want)
	}
}
