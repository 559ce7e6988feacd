package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/redisbackend"
	"github.com/governor-dev/governor/internal/exitcode"
)

// TestRunWaitBesideMalformedRecord: `governor run --if-busy wait` without
// --wait-timeout, on a resource whose state is corrupt (a Redis holder
// record, a state file), fails with exitcode.Failure naming it instead of
// waiting for ever.
func TestRunWaitBesideMalformedRecord(t *testing.T) {
	runTargets(t, "", func(t *testing.T, tg *target) {
		g := tg.governor(t)
		key := governor.Key{Project: runProject, Resource: "heavy"}
		res, err := g.Backend().Acquire(context.Background(), governor.Request{Key: key, ID: "corrupt", Limit: 1,
			Weight: 1, TTL: time.Minute, QueueTTL: time.Minute})
		if err != nil || res.Outcome != governor.Granted {
			t.Fatalf("Acquire = %+v, %v", res, err)
		}
		want := "corrupt state"
		if tg.redisURL != "" {
			opt, err := redis.ParseURL(tg.redisURL)
			if err != nil {
				t.Fatal(err)
			}
			rdb := redis.NewClient(opt)
			defer rdb.Close()
			if err := rdb.HSet(context.Background(), redisbackend.Keys(key)[1], "#corrupt", "garbage").Err(); err != nil {
				t.Fatal(err)
			}
			want = `malformed reply: the record of lease corrupt is "garbage"`
		} else if err := os.WriteFile(filepath.Join(tg.dir, runProject, "heavy", "state"), []byte("{"), 0o600); err != nil {
			t.Fatal(err)
		}
		// Generous: it must end, not be quick.
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		c := exec.CommandContext(ctx, tg.bin, append(tg.global(), "run", "--resource", "heavy", "--if-busy", "wait", "--", "true")...)
		c.Env = cleanEnv()
		out, err := c.CombinedOutput()
		if ctx.Err() != nil {
			t.Fatalf("governor run waited beside a corrupt state until killed; output %s", out)
		}
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		if code != exitcode.Failure || !strings.Contains(string(out), want) {
			t.Fatalf("exit %d (%v), want %d saying %q; output %s", code, err, exitcode.Failure, want, out)
		}
	})
}
