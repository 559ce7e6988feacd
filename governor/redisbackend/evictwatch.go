package redisbackend

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/governor-dev/governor/governor"
	scripts "github.com/governor-dev/governor/scripts-lua"
)

var quarantineScript = newScript(scripts.Quarantine)

// EvictionCheckEvery is how often, at most, the heartbeat batch
// (RenewBatch) reads the servers' eviction policy and evicted_keys again:
// New checks the policy once, but it can be changed at run time (CONFIG
// SET), and keys evicted then free held slots.
const EvictionCheckEvery = time.Second

// evictWatch is what the last eviction check saw.
type evictWatch struct {
	mu      sync.Mutex
	next    time.Time        // no check before it
	running bool             // a check is under way
	evicted map[string]int64 // server address -> its evicted_keys
	warned  map[string]bool  // addresses whose evicting policy was said
}

// watchEviction reads, at most every EvictionCheckEvery, each master's
// maxmemory-policy and evicted_keys; on evidence that governor's keys
// can be or were evicted (a policy that evicts, unless AllowEviction;
// evicted_keys grown since the last check) it quarantines the resources
// of rs, as the scripts do on evidence of lost data: no new grant there
// for the longest lease TTL, by when every holder that lost its keys has
// renewed and learnt it. A server that refuses INFO is not watched
// (New warned of it). The check runs beside the renewals, not after them
// (RenewBatch waits for both): its round trip must not add to theirs
// (over a slow link, one more round trip per heartbeat outran the leases'
// local deadlines). The channel returned is closed when it has ended.
func (b *Backend) watchEviction(ctx context.Context, rs []governor.Renewal) <-chan struct{} {
	done := make(chan struct{})
	w := &b.evict
	w.mu.Lock()
	if time.Now().Before(w.next) || w.running || len(rs) == 0 {
		w.mu.Unlock()
		close(done)
		return done
	}
	w.next, w.running = time.Now().Add(EvictionCheckEvery), true
	w.mu.Unlock()
	held := map[governor.Key]time.Duration{}
	for _, r := range rs {
		held[r.Key] = max(held[r.Key], r.TTL)
	}
	go func() {
		defer close(done)
		b.checkEvicted(ctx, held)
		w.mu.Lock()
		w.running = false
		w.mu.Unlock()
	}()
	return done
}

// checkEvicted is one check of watchEviction on the resources held (each
// with the longest TTL renewed there).
func (b *Backend) checkEvicted(ctx context.Context, held map[governor.Key]time.Duration) {
	w := &b.evict
	var (
		mu   sync.Mutex
		why  []string
		read = func(ctx context.Context, c *redis.Client) error {
			policy, evicted, err := evictionState(ctx, c)
			if err != nil {
				return nil
			}
			addr := c.Options().Addr
			was, seen := w.noteEvicted(addr, evicted)
			if b.allowEviction {
				return nil
			}
			mu.Lock()
			defer mu.Unlock()
			if seen && evicted > was {
				why = append(why, fmt.Sprintf("%s evicted %d keys", addr, evicted-was))
			}
			if policy == "" || policy == safePolicy {
				w.mu.Lock()
				delete(w.warned, addr)
				w.mu.Unlock()
				return nil
			}
			why = append(why, fmt.Sprintf("%s has maxmemory-policy %s", addr, policy))
			w.mu.Lock()
			said := w.warned[addr]
			w.warned[addr] = true
			w.mu.Unlock()
			if !said && b.warn != nil {
				b.warn(fmt.Sprintf("governor: redis: %s has maxmemory-policy %s now, which can evict governor's keys; grants are held back on the resources held here; set maxmemory-policy %s",
					addr, policy, safePolicy))
			}
			return nil
		}
	)
	switch c := b.rdb.(type) {
	case *redis.ClusterClient:
		_ = c.ForEachMaster(ctx, read)
	case *redis.Client:
		_ = read(ctx, c)
	}
	if len(why) == 0 {
		return
	}
	for key, ttl := range held {
		rk := b.resource(key)
		if ms := b.lossMS(rk, ttl); ms > 0 {
			_ = quarantineScript.Run(ctx, b.rdb, rk.keys, ms, "eviction: "+strings.Join(why, ", ")).Err()
		}
	}
}

// evictionState reads c's maxmemory_policy (INFO memory; "" when the
// section lacks it) and evicted_keys (INFO stats; -1 when absent) in one
// round trip.
func evictionState(ctx context.Context, c *redis.Client) (policy string, evicted int64, err error) {
	var mem, stats *redis.StringCmd
	if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		mem, stats = p.Info(ctx, "memory"), p.Info(ctx, "stats")
		return nil
	}); err != nil {
		return "", 0, err
	}
	evicted, perr := strconv.ParseInt(infoField(stats.Val(), "evicted_keys"), 10, 64)
	if perr != nil {
		evicted = -1
	}
	return infoField(mem.Val(), "maxmemory_policy"), evicted, nil
}

// noteEvicted records addr's evicted_keys n (-1: unknown) and returns the
// count before it, and whether there was one.
func (w *evictWatch) noteEvicted(addr string, n int64) (int64, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.evicted == nil {
		w.evicted, w.warned = map[string]int64{}, map[string]bool{}
	}
	was, seen := w.evicted[addr]
	if n < 0 {
		delete(w.evicted, addr)
		return 0, false
	}
	w.evicted[addr] = n
	return was, seen
}

// infoField is the value of field in an INFO reply, "" when absent.
func infoField(info, field string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v
		}
	}
	return ""
}
