package filebackend_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/conformance"
	"github.com/governor-dev/governor/governor/filebackend"
)

// fakeClock is a boot clock that moves only when told, shared by every
// Backend of a test (as CLOCK_BOOTTIME is by every process).
type fakeClock struct{ ns atomic.Int64 }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.ns.Store(int64(time.Hour)) // any instant after boot
	return c
}

func (c *fakeClock) now() time.Duration      { return time.Duration(c.ns.Load()) }
func (c *fakeClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

func open(t testing.TB, dir string, opts filebackend.Options) *filebackend.Backend {
	t.Helper()
	b, err := filebackend.New(dir, opts)
	if err != nil {
		t.Fatalf("filebackend.New: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// memDir returns a new directory in memory (under /dev/shm, a tmpfs on
// Linux), removed at the end of t, or t.TempDir() where there is none.
// The conformance suite proves the contract's logic, the same on any
// file system; on a disk each state write also waits for its sync, which
// only a power loss could observe (RateWindowBound's 8,000 writes: 343 s
// on ext4, 160 s on tmpfs, at load; HammerNeverOverLimit once outlived
// its 60 s acquire deadline there). The crash and multi-process tests
// keep their directories on disk.
func memDir(t *testing.T) string {
	dir, err := os.MkdirTemp("/dev/shm", "governor-conformance-")
	if err != nil {
		return t.TempDir()
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

func TestConformance(t *testing.T) {
	t.Parallel()
	dir := memDir(t)
	clock := newFakeClock()
	wall := time.Now().Add(-clock.now())
	conformance.Run(t, conformance.Harness{
		Open: func(t *testing.T) governor.Backend {
			return open(t, dir, filebackend.Options{Clock: clock.now, Wall: func() time.Time { return wall.Add(clock.now()) }})
		},
		Advance: func(t *testing.T, d time.Duration) { clock.advance(d) },
		Corrupt: func(t *testing.T, key governor.Key, _ string) {
			if err := os.WriteFile(filepath.Join(dir, key.Project, key.Resource, "state"), []byte("{"), 0o600); err != nil {
				t.Fatal(err)
			}
		},
		Damage: func(t *testing.T, key governor.Key, lease string, d conformance.Damage) bool {
			return damageState(t, filepath.Join(dir, key.Project, key.Resource, "state"), lease, d)
		},
		Crash: func(t *testing.T, b governor.Backend) { filebackend.Crash(b.(*filebackend.Backend)) },
	})
}

// damageState writes contradiction d into a state file, as a foreign
// write could. The file keeps no count of the weight held (it is summed
// from the holders) and holds holders and the rest together: only a bad
// queue entry or event can be written.
func damageState(t *testing.T, path, lease string, d conformance.Damage) bool {
	st := readStateMap(t, path)
	switch d {
	case conformance.DamageQueueEntry:
		ws, _ := st["waiters"].([]any)
		found := false
		for _, w := range ws {
			if w := w.(map[string]any); w["id"] == lease {
				w["weight"] = "heavy"
				found = true
			}
		}
		if !found {
			t.Fatalf("no waiter %s in %v", lease, st)
		}
	case conformance.DamageOverLimit:
		hs, _ := st["holders"].([]any)
		for i := range 5 {
			for _, h := range hs {
				if h := h.(map[string]any); h["id"] == lease {
					c := map[string]any{}
					for k, v := range h {
						c[k] = v
					}
					c["id"] = fmt.Sprintf("copy%d", i)
					st["holders"] = append(st["holders"].([]any), c)
				}
			}
		}
	case conformance.DamageEvent:
		evs, _ := st["events"].([]any)
		st["events"] = append(evs, map[string]any{"at": "yesterday", "kind": []int{1}})
	default:
		return false
	}
	writeStateMap(t, path, st)
	return true
}

// readStateMap reads the JSON file at path (a resource's state) as a map,
// for tests that change fields the backend does not export, and
// writeStateMap writes it back.
func readStateMap(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]any
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

func writeStateMap(t *testing.T, path string, st map[string]any) {
	t.Helper()
	data, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
