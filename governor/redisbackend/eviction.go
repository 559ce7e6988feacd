package redisbackend

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/governor-dev/governor/governor"
)

// AllowEviction lets New open a server whose maxmemory-policy can evict
// governor's keys (anything but noeviction). An evicted holder or state
// key frees a held slot, or leaves a resource busy with nobody in it: use
// it only where the memory limit is known never to be reached.
func AllowEviction() Option { return func(b *Backend) { b.allowEviction = true } }

// Warn sends New's warnings (one line each, such as an eviction policy
// that could not be read) to f; without it they are dropped.
func Warn(f func(msg string)) Option { return func(b *Backend) { b.warn = f } }

// safePolicy is the one maxmemory-policy that never evicts a key: with any
// other, a full server drops keys (allkeys-*: any key; volatile-*: keys
// with a TTL, as governor's rate keys) and governor's state with them.
const safePolicy = "noeviction"

// checkEviction reads maxmemory_policy from INFO memory on every master
// (each node of a Cluster holds its own policy) and refuses one that can
// evict, unless allowed. A server that refuses INFO (ACL, or an emulator
// without the section) cannot be checked: that is a warning, not a
// failure, since governor's own ACL need not include +info.
func (b *Backend) checkEviction(ctx context.Context) error {
	var (
		mu       sync.Mutex
		bad      []string
		unknown  []string
		checkOne = func(ctx context.Context, c *redis.Client) error {
			policy, evicted, err := evictionState(ctx, c)
			if err == nil {
				b.evict.noteEvicted(c.Options().Addr, evicted) // the watch's first count
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				var rerr redis.Error
				if !errors.As(err, &rerr) {
					return err // the server was not reached: New fails anyway
				}
				unknown = append(unknown, fmt.Sprintf("%s (%v)", c.Options().Addr, err))
			case policy == "":
				unknown = append(unknown, c.Options().Addr+" (no maxmemory_policy in INFO memory)")
			case policy != safePolicy:
				bad = append(bad, fmt.Sprintf("%s has maxmemory-policy %s", c.Options().Addr, policy))
			}
			return nil
		}
	)
	var err error
	switch c := b.rdb.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, checkOne)
	case *redis.Client:
		err = checkOne(ctx, c)
	default:
		unknown = append(unknown, fmt.Sprintf("a %T is not checked", b.rdb))
	}
	if err != nil {
		return fmt.Errorf("governor: redis: INFO memory: %w", err)
	}
	if len(unknown) > 0 && b.warn != nil {
		b.warn(fmt.Sprintf("governor: redis: the eviction policy could not be checked (run Redis with maxmemory-policy %s; grant +info to check it): %s",
			safePolicy, strings.Join(unknown, "; ")))
	}
	if len(bad) > 0 && !b.allowEviction {
		return fmt.Errorf("%w: redis: %s, which can evict governor's keys and so free a held slot or wedge a resource; set maxmemory-policy %s, or accept the risk with --allow-eviction (redis.allow_eviction, redisbackend.AllowEviction)",
			governor.ErrBackend, strings.Join(bad, ", "), safePolicy)
	}
	return nil
}
