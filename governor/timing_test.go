package governor_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/filebackend"
	"github.com/governor-dev/governor/governor/leasetiming"
	"github.com/governor-dev/governor/governor/redisbackend"
	"github.com/governor-dev/governor/internal/leasetest"
)

func TestLeaseTimingResolve(t *testing.T) {
	s := time.Second
	tests := []struct {
		in    leasetiming.Timing
		want  leasetiming.Timing
		field string // the bad value, "" when accepted
	}{
		{leasetiming.Timing{}, leasetiming.Timing{TTL: 30 * s, Heartbeat: 10 * s, SafetyMargin: 6 * s}, ""},
		{leasetiming.Timing{TTL: 5 * s}, leasetiming.Timing{TTL: 5 * s, Heartbeat: 5 * s / 3, SafetyMargin: s}, ""},
		{leasetiming.Timing{TTL: 2 * time.Minute}, leasetiming.Timing{TTL: 2 * time.Minute, Heartbeat: 10 * s, SafetyMargin: 24 * s}, ""},
		{leasetiming.Timing{TTL: 30 * s, Heartbeat: 23 * s}, leasetiming.Timing{TTL: 30 * s, Heartbeat: 23 * s, SafetyMargin: 6 * s}, ""},
		{leasetiming.Timing{TTL: 30 * s, Heartbeat: 24 * s}, leasetiming.Timing{}, "heartbeat"}, // not shorter than TTL-margin
		{leasetiming.Timing{TTL: 30 * s, Heartbeat: 30 * s}, leasetiming.Timing{}, "heartbeat"},
		{leasetiming.Timing{TTL: 30 * s, Heartbeat: -s}, leasetiming.Timing{}, "heartbeat"},
		{leasetiming.Timing{TTL: 30 * s, SafetyMargin: 30 * s}, leasetiming.Timing{}, "safety margin"},
		{leasetiming.Timing{TTL: 30 * s, SafetyMargin: -s}, leasetiming.Timing{}, "safety margin"},
		{leasetiming.Timing{TTL: 30 * s, SafetyMargin: 25 * s}, leasetiming.Timing{}, "heartbeat"}, // 10s heartbeat >= 5s left
		{leasetiming.Timing{TTL: 50 * time.Millisecond}, leasetiming.Timing{}, "TTL"},
		{leasetiming.Timing{TTL: -s}, leasetiming.Timing{}, "TTL"},
		{leasetiming.Timing{TTL: 25 * time.Hour}, leasetiming.Timing{}, "TTL"},
	}
	for _, tt := range tests {
		got, err := tt.in.Resolve(leasetiming.Names{})
		var te *leasetiming.Error
		switch {
		case tt.field == "" && (err != nil || got != tt.want):
			t.Errorf("%+v: got %+v, %v; want %+v", tt.in, got, err, tt.want)
		case tt.field != "" && (!errors.As(err, &te) || te.Field != tt.field):
			t.Errorf("%+v: got %v; want a leasetiming.Error on %s", tt.in, err, tt.field)
		}
	}
}

// The Governor refuses exactly what Resolve refuses.
func TestNewAgreesWithTiming(t *testing.T) {
	b, err := filebackend.New(t.TempDir(), filebackend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ttl := range []time.Duration{0, 50 * time.Millisecond, 100 * time.Millisecond, 5 * time.Second, 30 * time.Second, 25 * time.Hour} {
		for _, hb := range []time.Duration{0, time.Millisecond, 3 * time.Second, 10 * time.Second, 23 * time.Second, 24 * time.Second} {
			_, want := leasetiming.Timing{TTL: ttl, Heartbeat: hb}.Resolve(leasetiming.Names{})
			// Not closed: Close would close the shared backend.
			_, got := governor.New(b, governor.Options{TTL: ttl, Heartbeat: hb})
			var te *leasetiming.Error
			if (want == nil) != (got == nil) || got != nil && (!errors.Is(got, governor.ErrInvalid) || !errors.As(got, &te) || got.Error() != governor.ErrInvalid.Error()+": "+want.Error()) {
				t.Errorf("ttl %v heartbeat %v: New %v, Resolve %v; want the same, an ErrInvalid", ttl, hb, got, want)
			}
		}
	}
}

// A lease with its own TTL derives its heartbeat from that TTL when
// Options set none; one that does not heartbeat has only its TTL checked.
func TestAcquireOwnTTL(t *testing.T) {
	b, err := filebackend.New(t.TempDir(), filebackend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	g, err := governor.New(b, governor.Options{Project: "p"})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	for _, ttl := range []time.Duration{time.Second, 5 * time.Second, 10 * time.Second, 11 * time.Second, time.Minute} {
		l, err := g.Acquire(ctx, "r", governor.AcquireOptions{Limit: 1, TTL: ttl})
		if err != nil {
			t.Fatalf("TTL %v: %v", ttl, err)
		}
		if err := l.Release(); err != nil {
			t.Fatal(err)
		}
	}

	// An explicit heartbeat that does not fit the lease's own TTL is
	// refused, naming it, unless the lease does not heartbeat.
	g2, err := governor.New(b, governor.Options{Project: "p", Heartbeat: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer g2.Close()
	_, err = g2.Acquire(ctx, "r", governor.AcquireOptions{Limit: 1, TTL: 5 * time.Second})
	if !errors.Is(err, governor.ErrInvalid) || !strings.Contains(err.Error(), "heartbeat 10s") {
		t.Fatalf("explicit heartbeat 10s with TTL 5s: %v", err)
	}
	l, err := g2.Acquire(ctx, "r", governor.AcquireOptions{Limit: 1, TTL: 5 * time.Second, NoHeartbeat: true})
	if err != nil {
		t.Fatalf("NoHeartbeat with TTL 5s: %v", err)
	}
	l.Detach()
	if err := g2.ReleaseHandle(ctx, l.Handle(), false); err != nil {
		t.Fatal(err)
	}
	if _, err := g2.Acquire(ctx, "r", governor.AcquireOptions{Limit: 1, TTL: 50 * time.Millisecond, NoHeartbeat: true}); !errors.Is(err, governor.ErrInvalid) {
		t.Fatalf("NoHeartbeat with TTL 50ms: %v", err)
	}
}

func TestNewNilBackend(t *testing.T) {
	var fb *filebackend.Backend
	var rb *redisbackend.Backend
	for _, b := range []governor.Backend{nil, fb, rb} {
		if _, err := governor.New(b, governor.Options{}); !errors.Is(err, governor.ErrInvalid) {
			t.Errorf("New(%T(nil)) = %v, want ErrInvalid", b, err)
		}
	}
	if _, err := redisbackend.New(context.Background(), nil); !errors.Is(err, governor.ErrInvalid) {
		t.Errorf("redisbackend.New(nil) = %v, want ErrInvalid", err)
	}
}

// A lease that does not heartbeat and is kept is lost at its deadline.
func TestNoHeartbeatLeaseIsLostAtItsDeadline(t *testing.T) {
	g := newFileGovernor(t)
	l, err := g.Acquire(context.Background(), "r", governor.AcquireOptions{Limit: 1, TTL: 200 * time.Millisecond, NoHeartbeat: true})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("Done not closed long after the deadline")
	}
	if !errors.Is(l.Err(), governor.ErrLeaseLost) || !errors.Is(l.Release(), governor.ErrLeaseLost) {
		t.Fatalf("Err %v after the deadline; want ErrLeaseLost", l.Err())
	}
}

// newFileGovernor is a Governor of project "p" on a fresh file backend,
// closed when the test ends.
func newFileGovernor(t *testing.T) *governor.Governor {
	t.Helper()
	return leasetest.FileGovernor(t, t.TempDir(), governor.Options{Project: "p"})
}
