package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/governor-dev/governor/internal/redistest"
)

// TestRunShort runs every contender briefly: the benchmark builds, its
// peers take and free locks, and it prints each figure.
func TestRunShort(t *testing.T) {
	if ok, err := redistest.Available(); err != nil {
		t.Fatal(err)
	} else if !ok {
		t.Skip("redis-server not installed; set GOVERNOR_REQUIRE_REDIS=1 to fail instead")
	}
	var out strings.Builder
	if err := run(&out, config{turn: 50 * time.Millisecond, rounds: 1, handoffs: 10}); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out.String())
	for _, want := range []string{"raw-evalsha", "governor", "governor-1proc", "redislock", "redsync", "governor / redislock", "p50", "RATIO governor/redislock.pairs.64=", "RATIO governor-1proc/governor.handoff-p50="} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

func TestRunRejectsBadFlags(t *testing.T) {
	for _, c := range []config{{turn: time.Second, rounds: 0, handoffs: 1}, {turn: time.Second, rounds: 1, handoffs: 1, only: "redis"}} {
		err := run(os.Stdout, c)
		if err == nil {
			t.Errorf("run(%+v) = nil; want an error", c)
		}
	}
}
