package redisbackend_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/conformance"
	"github.com/governor-dev/governor/governor/redisbackend"
	"github.com/governor-dev/governor/internal/redistest"
)

func open(t *testing.T, addr string) governor.Backend {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	b, err := redisbackend.New(context.Background(), rdb)
	if err != nil {
		t.Fatalf("redisbackend.New: %v", err)
	}
	t.Cleanup(func() {
		_ = b.Close()
		_ = rdb.Close()
	})
	return b
}

// miniClock moves miniredis's TIME and its key TTLs together.
type miniClock struct {
	mu  sync.Mutex
	m   *miniredis.Miniredis
	now time.Time
}

func (c *miniClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.m.SetTime(c.now)
	c.m.FastForward(d)
}

func TestConformanceMiniredis(t *testing.T) {
	m := miniredis.RunT(t)
	clock := &miniClock{m: m, now: time.Now()}
	m.SetTime(clock.now)
	conformance.Run(t, conformance.Harness{
		Open:    func(t *testing.T) governor.Backend { return open(t, m.Addr()) },
		Advance: func(t *testing.T, d time.Duration) { clock.advance(d) },
	})
}

func TestConformanceRealRedis(t *testing.T) {
	s := redistest.Start(t)
	conformance.Run(t, conformance.Harness{
		Open:     func(t *testing.T) governor.Backend { return open(t, s.Addr) },
		Advance:  func(t *testing.T, d time.Duration) { time.Sleep(d) },
		RealTime: true,
	})
}
