package filebackend_test

import (
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

func TestConformance(t *testing.T) {
	dir := t.TempDir()
	clock := newFakeClock()
	conformance.Run(t, conformance.Harness{
		Open: func(t *testing.T) governor.Backend {
			return open(t, dir, filebackend.Options{Clock: clock.now})
		},
		Advance: func(t *testing.T, d time.Duration) { clock.advance(d) },
		Corrupt: func(t *testing.T, key governor.Key, _ string) {
			if err := os.WriteFile(filepath.Join(dir, key.Project, key.Resource, "state"), []byte("{"), 0o600); err != nil {
				t.Fatal(err)
			}
		},
	})
}
