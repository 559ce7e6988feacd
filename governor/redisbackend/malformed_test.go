package redisbackend_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/redisbackend"
)

// TestMalformedRecordNamed: a holder record that does not parse is a
// governor.ErrBackend naming the lease and what is wrong with it, in
// Status and in a refusal. (That it ends a wait is the conformance
// suite's MalformedStateEndsWait.)
func TestMalformedRecordNamed(t *testing.T) {
	t.Parallel() // its own miniredis servers; beside the conformance runs
	for _, c := range []struct{ name, record, want string }{
		{"garbage", "garbage", `record of lease`},
		{"number", "1 30000 x 5 {}", `the token`},
		{"declaration", "1 30000 5 5 {not json", `declaration of lease`},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := miniredis.RunT(t)
			b := open(t, m.Addr())
			key := governor.Key{Project: "p", Resource: "r"}
			holder := governor.Request{Key: key, ID: "held", Limit: 1, Weight: 1, TTL: time.Minute, QueueTTL: time.Minute}
			if res, err := b.Acquire(context.Background(), holder); err != nil || res.Outcome != governor.Granted {
				t.Fatalf("Acquire = %+v, %v", res, err)
			}
			m.HSet(redisbackend.Keys(key)[1], "#held", c.record)

			check := func(op string, err error) {
				t.Helper()
				if !errors.Is(err, governor.ErrBackend) || !strings.Contains(err.Error(), "held") ||
					!strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "malformed") {
					t.Fatalf("%s beside a malformed record: %v; want ErrBackend naming lease held and %q", op, err, c.want)
				}
			}
			_, err := b.Status(context.Background(), key)
			check("Status", err)
			_, err = b.Acquire(context.Background(), governor.Request{Key: key, ID: "other", Limit: 1, Weight: 1,
				TTL: time.Minute, QueueTTL: time.Minute, Mode: governor.Wait})
			check("a queued Acquire", err)
		})
	}
}

// TestMalformedMetaNamed: a meta field that holds no number (limit abc,
// written by something else) is a governor.ErrBackend naming the key and
// the field, on the fast paths too, never a raw Lua arithmetic error
// (issue 25.12).
func TestMalformedMetaNamed(t *testing.T) {
	t.Parallel() // its own miniredis servers; beside the conformance runs
	for _, field := range []string{"limit", "drift", "token", "acquired", "released"} {
		t.Run(field, func(t *testing.T) {
			m := miniredis.RunT(t)
			b := open(t, m.Addr())
			ctx := context.Background()
			key := governor.Key{Project: "p", Resource: "r"}
			held := governor.Request{Key: key, ID: "held", Limit: 2, Weight: 1, TTL: time.Minute, QueueTTL: time.Minute, New: true}
			if res, err := b.Acquire(ctx, held); err != nil || res.Outcome != governor.Granted {
				t.Fatalf("Acquire = %+v, %v", res, err)
			}
			m.HSet(redisbackend.Keys(key)[1], field, "abc")
			check := func(op string, err error) {
				t.Helper()
				if err == nil {
					return // this operation does not read the field
				}
				if !errors.Is(err, governor.ErrBackend) || strings.Contains(err.Error(), "arithmetic") ||
					!strings.Contains(err.Error(), redisbackend.Keys(key)[1]) || !strings.Contains(err.Error(), field) {
					t.Fatalf("%s with %s abc: %v; want ErrBackend naming the key and the field", op, field, err)
				}
			}
			_, err := b.Acquire(ctx, governor.Request{Key: key, ID: "other", Limit: 2, Weight: 1, TTL: time.Minute, QueueTTL: time.Minute, New: true})
			check("Acquire", err)
			check("Release", b.Release(ctx, key, held.ID, ""))
		})
	}
}
