package faults_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/redistest"
)

// snapshot is everything a Redis server holds, for "nothing changed".
func snapshot(t *testing.T, rdb *redis.Client) map[string]string {
	t.Helper()
	ctx := context.Background()
	keys, err := rdb.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, k := range keys {
		d, err := rdb.Dump(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		out[k] = d
	}
	return out
}

func sameSnapshot(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s changed key %s", what, k)
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			t.Errorf("%s created key %s", what, k)
		}
	}
}

// Library: bad names, weights, limits and TTLs are clear errors
// (ErrInvalid, ErrTooHeavy) and leave the server exactly as it was.
func TestBadInputLibrary(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	rdb := client(t, s.Addr)
	project := uniq("bad")
	g := newGovernor(t, s.Addr, governor.Options{Project: project, TTL: 5 * time.Second})
	ctx := context.Background()
	held, err := g.Acquire(ctx, "good", governor.AcquireOptions{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	// Heartbeats rewrite the holder's expiry: compare with it stopped.
	held.Detach()
	before := snapshot(t, rdb)

	huge := strings.Repeat("a", 1<<20)
	for _, tc := range []struct {
		name     string
		resource string
		o        governor.AcquireOptions
		want     error
		msg      string
	}{
		{"empty name", "", governor.AcquireOptions{Limit: 1}, governor.ErrInvalid, "empty resource name"},
		{"1 MiB name", huge, governor.AcquireOptions{Limit: 1}, governor.ErrInvalid, "at most 200 bytes"},
		{"newline", "a\nb", governor.AcquireOptions{Limit: 1}, governor.ErrInvalid, "white space"},
		{"NUL", "a\x00b", governor.AcquireOptions{Limit: 1}, governor.ErrInvalid, "printable"},
		{"hash tag", "a{b}", governor.AcquireOptions{Limit: 1}, governor.ErrInvalid, "not allowed"},
		{"closing brace", "good}", governor.AcquireOptions{Limit: 1}, governor.ErrInvalid, "not allowed"},
		{"invalid UTF-8", "a\xffb", governor.AcquireOptions{Limit: 1}, governor.ErrInvalid, "UTF-8"},
		{"negative weight", "good", governor.AcquireOptions{Limit: 2, Weight: -1}, governor.ErrInvalid, "weight -1"},
		{"weight above limit", "good", governor.AcquireOptions{Limit: 2, Weight: 3}, governor.ErrTooHeavy, "weight 3"},
		{"exclusive with a weight", "good", governor.AcquireOptions{Limit: 2, Weight: 1, Exclusive: true}, governor.ErrInvalid, "exclusive"},
		{"negative limit", "good", governor.AcquireOptions{Limit: -5}, governor.ErrInvalid, "limit -5"},
		{"enormous limit", "good", governor.AcquireOptions{Limit: math.MaxInt}, governor.ErrInvalid, "allowed: 1 to"},
		{"limit above max", "good", governor.AcquireOptions{Limit: governor.MaxLimit + 1}, governor.ErrInvalid, "allowed: 1 to"},
		{"negative TTL", "good", governor.AcquireOptions{Limit: 2, TTL: -time.Second}, governor.ErrInvalid, "TTL"},
		{"TTL 1ns", "good", governor.AcquireOptions{Limit: 2, TTL: time.Nanosecond}, governor.ErrInvalid, "TTL"},
		{"TTL 25h", "good", governor.AcquireOptions{Limit: 2, TTL: 25 * time.Hour}, governor.ErrInvalid, "TTL"},
		{"bad mode", "good", governor.AcquireOptions{Limit: 2, Mode: governor.Mode(7)}, governor.ErrInvalid, "mode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, mode := range []governor.Mode{governor.Fail, governor.Wait} {
				o := tc.o
				if o.Mode == governor.Fail {
					o.Mode = mode
				}
				cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				l, err := g.Acquire(cctx, tc.resource, o)
				cancel()
				if l != nil || !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
					t.Fatalf("Acquire: %v, want %v mentioning %q", err, tc.want, tc.msg)
				}
				if len(err.Error()) > 400 {
					t.Fatalf("error of %d bytes: the input is not truncated", len(err.Error()))
				}
			}
			if tc.o.Limit == 1 { // a name case: every entry point refuses it
				if _, err := g.Status(ctx, tc.resource); !errors.Is(err, governor.ErrInvalid) {
					t.Fatalf("Status: %v", err)
				}
				if err := g.ReleaseHandle(ctx, governor.Handle{Resource: tc.resource, ID: held.ID(), Secret: held.Handle().Secret}, false); !errors.Is(err, governor.ErrInvalid) {
					t.Fatalf("Release: %v", err)
				}
				if _, err := g.RenewHandle(ctx, governor.Handle{Resource: tc.resource, ID: held.ID(), Secret: held.Handle().Secret}, 0); !errors.Is(err, governor.ErrInvalid) {
					t.Fatalf("Renew: %v", err)
				}
			}
		})
	}
	if _, err := g.RenewHandle(ctx, held.Handle(), -time.Second); !errors.Is(err, governor.ErrInvalid) {
		t.Fatalf("Renew with a negative TTL: %v", err)
	}
	if _, err := g.Hold(ctx, governor.Ask{Wants: []governor.Want{{Resource: "x", AcquireOptions: governor.AcquireOptions{Limit: 1}},
		{Resource: "", AcquireOptions: governor.AcquireOptions{Limit: 1}}}}); !errors.Is(err, governor.ErrInvalid) {
		t.Fatalf("Hold with a bad name after a good one: %v", err)
	}
	for _, o := range []governor.Options{{TTL: -time.Second}, {TTL: time.Nanosecond}, {Project: "a b"}, {Project: "{p}"},
		{TTL: time.Second, Heartbeat: 2 * time.Second}, {QueueTTL: -1}} {
		if _, err := governor.New(g.Backend(), o); !errors.Is(err, governor.ErrInvalid) {
			t.Errorf("New(%+v): %v, want ErrInvalid", o, err)
		}
	}
	sameSnapshot(t, "bad input", before, snapshot(t, rdb))

	// A weight above the limit in force (another process configured a
	// smaller one): ErrTooHeavy, and no waiter is left queued. (The
	// other limit is recorded as drift, on purpose.)
	for _, mode := range []governor.Mode{governor.Fail, governor.Wait} {
		_, err := g.Acquire(ctx, "good", governor.AcquireOptions{Limit: 5, Weight: 4, Mode: mode})
		if !errors.Is(err, governor.ErrTooHeavy) {
			t.Fatalf("weight 4 of limit 5 while the limit in force is 2: %v", err)
		}
	}
	if st, err := g.Status(ctx, "good"); err != nil || len(st.Waiters) != 0 || len(st.Holders) != 1 || st.Limit != 2 || st.DriftLimit != 5 {
		t.Fatalf("good after bad input: %+v %v", st, err)
	}
}
