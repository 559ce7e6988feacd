package governor_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/filebackend"
	"github.com/governor-dev/governor/governor/redisbackend"
)

// A refusal despite free slots names the rule that refused: a class's
// cap, a fair key's fair_cap, a higher class's reserve, waiters queued
// ahead; one for want of room names none. On the file backend and
// (miniredis) on Redis.
func TestRefusalNamesTheRule(t *testing.T) {
	backends := map[string]func(t *testing.T) governor.Backend{
		"file": func(t *testing.T) governor.Backend {
			b, err := filebackend.New(t.TempDir(), filebackend.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return b
		},
		"redis": func(t *testing.T) governor.Backend {
			rdb := redis.NewClient(&redis.Options{Addr: miniredis.RunT(t).Addr()})
			b, err := redisbackend.New(context.Background(), rdb)
			if err != nil {
				t.Fatal(err)
			}
			return b
		},
	}
	reserve := governor.Policy{Classes: []governor.Class{{Name: "critical", Reserve: 1}, {Name: "batch"}}}
	capped := governor.Policy{Classes: []governor.Class{{Name: "default"}, {Name: "batch", Cap: 2}}}
	fair := governor.Policy{FairCap: 1}
	type take struct {
		o    governor.AcquireOptions
		wait bool // queued, not held
	}
	for _, tc := range []struct {
		name string
		held []take
		try  governor.AcquireOptions
		want string // "" for no rule
	}{
		{"reserve", []take{{o: governor.AcquireOptions{Limit: 3, Policy: reserve, Priority: "batch", Weight: 2}}},
			governor.AcquireOptions{Limit: 3, Policy: reserve, Priority: "batch"},
			"refused by the reserve of the classes above batch: 1 free, 1 of them reserved (critical 1)"},
		{"cap", []take{{o: governor.AcquireOptions{Limit: 4, Policy: capped, Priority: "batch", Weight: 2}}},
			governor.AcquireOptions{Limit: 4, Policy: capped, Priority: "batch"},
			"refused by the cap of class batch: it holds 2 of its cap 2"},
		{"fair_cap", []take{{o: governor.AcquireOptions{Limit: 3, Policy: fair, FairKey: "alice"}}},
			governor.AcquireOptions{Limit: 3, Policy: fair, FairKey: "alice"},
			"refused by fair_cap: fair key alice holds 1 of its fair_cap 1"},
		{"queue", []take{{o: governor.AcquireOptions{Limit: 2}}, {o: governor.AcquireOptions{Limit: 2, Weight: 2}, wait: true}},
			governor.AcquireOptions{Limit: 2},
			"refused by the queue: 1 waiting ahead"},
		{"no room", []take{{o: governor.AcquireOptions{Limit: 1}}}, governor.AcquireOptions{Limit: 1}, ""},
	} {
		for name, open := range backends {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				g, err := governor.New(open(t), governor.Options{})
				if err != nil {
					t.Fatal(err)
				}
				defer g.Close()
				for _, h := range tc.held {
					if h.wait {
						ctx, cancel := context.WithCancel(t.Context())
						defer cancel()
						o := h.o
						o.Mode = governor.Wait
						queued := make(chan struct{}, 1)
						o.OnQueued = func(governor.Result) {
							select {
							case queued <- struct{}{}:
							default:
							}
						}
						go func() { _, _ = g.Acquire(ctx, "r", o) }()
						<-queued
						continue
					}
					l, err := g.Acquire(t.Context(), "r", h.o)
					if err != nil {
						t.Fatal(err)
					}
					defer l.Release()
				}
				_, err = g.Acquire(t.Context(), "r", tc.try)
				var busy *governor.BusyError
				if !errors.As(err, &busy) {
					t.Fatalf("acquire: %v, want a BusyError", err)
				}
				if tc.want == "" && busy.Rule != "" || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("refusal %q (rule %q); want it to say %q", err, busy.Rule, tc.want)
				}
			})
		}
	}
}
