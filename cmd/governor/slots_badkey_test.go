//go:build !governor_noserve

package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/redisbackend"
	"github.com/governor-dev/governor/internal/exitcode"
	"github.com/governor-dev/governor/internal/redistest"
	"github.com/governor-dev/governor/internal/statuspage"
	"github.com/governor-dev/governor/internal/view"
)

// One resource whose state key holds a value of another type (SET where
// a hash is expected) does not break `slots` or /api/v1/slots for the
// project: the others are listed and the bad one is named; slots exits
// 125, as events does. On a real Redis and on miniredis.
func TestSlotsOneBadKey(t *testing.T) {
	t.Parallel()
	for name, addr := range map[string]func(t *testing.T) string{
		"redis":     func(t *testing.T) string { return redistest.Start(t).Addr },
		"miniredis": func(t *testing.T) string { return miniredis.RunT(t).Addr() },
	} {
		t.Run(name, func(t *testing.T) {
			url := "redis://" + addr(t) + "/0"
			g := badKeyProject(t, url)
			global := []string{"--backend", "redis", "--redis-url", url, "--config", emptyConfig(t)}
			code, out, errs := cli(t, append(global, "slots")...)
			if code != exitcode.Failure || !strings.Contains(out, "good  limit 1") || !strings.Contains(out, "bad  UNREADABLE") ||
				!strings.Contains(errs, "the state of bad cannot be read") {
				t.Errorf("slots with one bad key: exit %d, stdout %q, stderr %q; want 125, good listed, bad named", code, out, errs)
			}
			code, out, _ = cli(t, append(global, "--json", "slots")...)
			var sj view.Slots
			if err := json.Unmarshal([]byte(out), &sj); err != nil || code != exitcode.Failure {
				t.Fatalf("slots --json: exit %d, %v: %s", code, err, out)
			}
			if !listed(sj, "good") || listed(sj, "bad") || len(sj.Unreadable) != 1 || sj.Unreadable[0].Resource != "bad" ||
				!strings.Contains(sj.Unreadable[0].Error, "wrong type") {
				t.Errorf("slots --json: resources %+v, unreadable %+v; want good, and bad unreadable", sj.Resources, sj.Unreadable)
			}

			mux := http.NewServeMux()
			statuspage.NewPage(g, statuspage.PageOptions{Timeout: 5 * time.Second}).Register(mux)
			s := httptest.NewServer(mux)
			defer s.Close()
			var api view.Slots
			getJSON(t, s.URL+"/api/v1/slots", http.StatusOK, &api)
			if !listed(api, "good") || len(api.Unreadable) != 1 || api.Unreadable[0].Resource != "bad" {
				t.Errorf("/api/v1/slots: resources %+v, unreadable %+v; want good, and bad unreadable", api.Resources, api.Unreadable)
			}
		})
	}
}

func listed(s view.Slots, resource string) bool {
	for _, r := range s.Resources {
		if r.Resource == resource {
			return true
		}
	}
	return false
}

// badKeyProject makes resources good and bad in project clitest at url,
// then overwrites bad's state hash with a string, and returns a Governor
// of that project.
func badKeyProject(t *testing.T, url string) *governor.Governor {
	t.Helper()
	ctx := context.Background()
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { rdb.Close() })
	b, err := redisbackend.New(ctx, rdb)
	if err != nil {
		t.Fatal(err)
	}
	g, err := governor.New(b, governor.Options{Project: "clitest"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	for _, res := range []string{"good", "bad"} {
		l, err := g.Acquire(ctx, res, governor.AcquireOptions{Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(); err != nil {
			t.Fatal(err)
		}
	}
	bad := redisbackend.Keys(governor.Key{Project: "clitest", Resource: "bad"})[0]
	if err := rdb.Del(ctx, bad).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(ctx, bad, "not a hash", 0).Err(); err != nil {
		t.Fatal(err)
	}
	return g
}
