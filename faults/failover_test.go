package faults_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/redisbackend"
	"github.com/governor-dev/governor/internal/redistest"
)

// TestSentinelFailover: a master with a replica, watched by a Sentinel;
// governors reach it by a redis+sentinel:// URL. A lease is granted and
// replicated, then the master is killed. The Sentinel promotes the
// replica, the clients follow it, and the lease carries on: its holder
// keeps renewing it on the new master (Err stays nil), another process is
// refused meanwhile (no second holder), and once it is released the other
// process is granted with a higher fencing token.
func TestSentinelFailover(t *testing.T) {
	t.Parallel()
	master := redistest.Start(t)
	replica := redistest.StartReplica(t, master)
	sentinel := redistest.StartSentinel(t, master)
	url := "redis+sentinel://" + sentinel.Addr + "?master_name=main"
	project := uniq("failover")
	open := func(who string) *governor.Governor {
		t.Helper()
		rdb, err := redisbackend.NewClient(url)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		b, err := redisbackend.New(ctx, rdb, redisbackend.OwnClient())
		if err != nil {
			_ = rdb.Close()
			t.Fatal(err)
		}
		// A TTL far above the failover time (about a second here): the
		// lease must ride it out, not merely be re-acquired after it.
		g, err := governor.New(b, governor.Options{Project: project, TTL: 15 * time.Second, Session: who})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { g.Close() })
		return g
	}
	holder, other := open("holder"), open("other")
	ctx := context.Background()
	l, err := holder.Acquire(ctx, "heavy", governor.AcquireOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	// The grant is on the replica before the master goes.
	mc := redis.NewClient(&redis.Options{Addr: master.Addr})
	if n, err := mc.Wait(ctx, 1, 5*time.Second).Result(); err != nil || n < 1 {
		t.Fatalf("WAIT for the replica: %d, %v", n, err)
	}
	_ = mc.Close()
	master.Stop()

	rc := redis.NewClient(&redis.Options{Addr: replica.Addr})
	defer rc.Close()
	eventually(t, 30*time.Second, "the sentinel promotes the replica", func() bool {
		role, err := rc.Do(ctx, "ROLE").Slice()
		return err == nil && len(role) > 0 && role[0] == "master"
	})

	// The other process reaches the new master and is refused: the lease
	// survived the failover.
	eventually(t, 30*time.Second, "the other process is answered by the new master", func() bool {
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, err := other.Acquire(actx, "heavy", governor.AcquireOptions{Limit: 1})
		var busy *governor.BusyError
		if errors.As(err, &busy) {
			return true
		}
		if err == nil {
			t.Fatal("the other process was granted the slot while the holder's lease survived the failover")
		}
		return false
	})
	// The holder renews on the new master: its lease outlives one TTL
	// counted from before the failover only if renewals reach it.
	eventually(t, 60*time.Second, "a renewal on the new master", func() bool {
		return l.Expires().After(time.Now().Add(14 * time.Second))
	})
	if err := l.Err(); err != nil {
		t.Fatalf("the lease was lost across the failover: %v", err)
	}
	if err := l.Release(); err != nil {
		t.Fatalf("release on the new master: %v", err)
	}
	l2, err := other.Acquire(ctx, "heavy", governor.AcquireOptions{Limit: 1})
	if err != nil {
		t.Fatalf("acquire after the release: %v", err)
	}
	if l2.Token() <= l.Token() {
		t.Fatalf("token after the failover %d, not above %d", l2.Token(), l.Token())
	}
	_ = l2.Release()
}
