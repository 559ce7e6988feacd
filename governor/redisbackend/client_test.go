package redisbackend_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/governor-dev/governor/governor/redisbackend"
	"github.com/governor-dev/governor/internal/redistest"
)

func TestNewClientTopologies(t *testing.T) {
	for _, tt := range []struct {
		url  string
		want string // the client's type, or the start of the error
	}{
		{"redis://127.0.0.1:6379/0", "*redis.Client"},
		{"unix:///run/redis.sock?db=1", "*redis.Client"},
		{"redis+cluster://127.0.0.1:7000?addr=127.0.0.1:7001", "*redis.ClusterClient"},
		{"rediss+cluster://127.0.0.1:7000", "*redis.ClusterClient"},
		{"redis+sentinel://127.0.0.1:26379/2?master_name=main", "*redis.Client"},
		{"redis+sentinel://127.0.0.1:26379", "error: redis: a sentinel URL needs ?master_name=NAME"},
		{"redis+cluster://127.0.0.1:7000?bogus=1", "error: redis: unexpected option: bogus"},
		{"http+cluster://h:1", "error: redis: invalid URL scheme: http"},
		{"redis+ring://h:1", `error: redis: scheme "redis+ring": want redis, rediss, unix, redis+cluster or redis+sentinel`},
	} {
		c, err := redisbackend.NewClient(tt.url)
		got := ""
		switch v := c.(type) {
		case nil:
			got = "error: " + err.Error()
		case *redis.Client:
			got = "*redis.Client"
			_ = v.Close()
		case *redis.ClusterClient:
			got = "*redis.ClusterClient"
			_ = v.Close()
		}
		if !strings.HasPrefix(got, tt.want) {
			t.Errorf("NewClient(%q) = %s, want %s", tt.url, got, tt.want)
		}
	}
}

// A URL that does not parse is not echoed with its password (issue
// 24.17): go-redis quotes the URL, or the ?addr= that failed, whole.
func TestNewClientErrorHidesPasswords(t *testing.T) {
	for _, u := range []string{"redis+cluster://h:1?addr=u:PW@x:2", "redis://u:PW@h:bad"} {
		_, err := redisbackend.NewClient(u)
		if err == nil || strings.Contains(err.Error(), "PW") || !strings.Contains(err.Error(), "u:***@") {
			t.Errorf("NewClient(%q) = %v; want an error showing u:***@", u, err)
		}
	}
}

func TestOwnClient(t *testing.T) {
	m := miniredis.RunT(t)
	for _, own := range []bool{false, true} {
		rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
		var opts []redisbackend.Option
		if own {
			opts = append(opts, redisbackend.OwnClient())
		}
		b, err := redisbackend.New(context.Background(), rdb, opts...)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		err = rdb.Ping(context.Background()).Err()
		if own && !errors.Is(err, redis.ErrClosed) || !own && err != nil {
			t.Errorf("OwnClient %v: ping after Close: %v", own, err)
		}
		_ = rdb.Close()
	}
}

// TestNewLoadsOnlyMissingScripts: a backend opened where an earlier one
// loaded the scripts asks once (SCRIPT EXISTS) and loads none; after a
// SCRIPT FLUSH it loads them all again.
func TestNewLoadsOnlyMissingScripts(t *testing.T) {
	s := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer rdb.Close()
	ctx := context.Background()
	loads := func() int64 {
		t.Helper()
		if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		b, err := redisbackend.New(ctx, rdb)
		if err != nil {
			t.Fatal(err)
		}
		_ = b.Close()
		info, err := rdb.Info(ctx, "commandstats").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(info, "\n") {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_script|load:calls="); ok {
				n, _ := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
				return n
			}
		}
		return 0
	}
	first := loads()
	if first == 0 {
		t.Fatal("the first backend loaded no script")
	}
	if again := loads(); again != 0 {
		t.Fatalf("a second backend loaded %d scripts the server already had", again)
	}
	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if after := loads(); after != first {
		t.Fatalf("after SCRIPT FLUSH a backend loaded %d scripts, want all %d", after, first)
	}
}
