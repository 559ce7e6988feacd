package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
)

var update = flag.Bool("update", false, "rewrite golden files")

// fixedState is a resource with two holders, a waiter and drift, read at
// a fixed instant.
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
			Declaration: governor.Declaration{Session: "nightly", Host: "box1", PID: 5150}}},
		Counters: governor.Counters{Acquired: 10, Busy: 3, Waited: 4, Released: 8, ReclaimedExpiry: 1},
	}, {
		Key: governor.Key{Project: "prj-0001", Resource: "heavy"}, Limit: 1, Now: now,
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
	writeSlots(&human, "prj-0001", fixedState())
	golden(t, "slots.txt", human.Bytes())
	var js bytes.Buffer
	if err := writeJSON(&js, toSlotsJSON("prj-0001", fixedState())); err != nil {
		t.Fatal(err)
	}
	golden(t, "slots.json", js.Bytes())
}
