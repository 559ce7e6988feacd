package main

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/governor-dev/governor/internal/redistest"
)

// TestRenewTokenAfterFlushAll: `governor renew` of a lease that another
// process acquired, after Redis lost its data (FLUSHALL) and a newcomer
// of another machine started the resource afresh, learns that the lease is lost (122);
// without the lease's token that is all, with it ($GOVERNOR_TOKEN, as
// acquire printed it) the renewal is evidence of the loss: a quarantine
// event, and the next acquire of the idle resource is refused.
func TestRenewTokenAfterFlushAll(t *testing.T) {
	s := redistest.Start(t)
	g := []string{"--backend", "redis", "--redis-url", s.URL(), "--config", emptyConfig(t)}
	code, out, errs := cli(t, append(g, "acquire", "heavy", "--limit", "1", "--ttl", "1m")...)
	fields := strings.Fields(out)
	if code != 0 || len(fields) != 2 {
		t.Fatalf("acquire: exit %d, %q %s; want 'HANDLE TOKEN'", code, out, errs)
	}
	lease, token := fields[0], fields[1]
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer rdb.Close()
	if err := rdb.FlushAll(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	// The newcomer is of another machine (its own state dir, no witness
	// of the resource): one of this machine would be held back.
	elsewhere := append(g[:len(g):len(g)], "--dir", t.TempDir())
	code, out, errs = cli(t, append(elsewhere, "acquire", "heavy", "--limit", "1")...)
	if code != 0 {
		t.Fatalf("the newcomer's acquire: exit %d, %s", code, errs)
	}
	if code, _, errs = cli(t, append(elsewhere, "release", strings.Fields(out)[0])...); code != 0 {
		t.Fatalf("the newcomer's release: exit %d, %s", code, errs)
	}
	quarantined := func() bool {
		t.Helper()
		code, out, errs := cli(t, append(g, "events", "heavy")...)
		if code != 0 {
			t.Fatalf("events: exit %d, %s", code, errs)
		}
		return strings.Contains(out, "quarantine")
	}

	t.Setenv("GOVERNOR_LEASE", lease)
	t.Setenv("GOVERNOR_TOKEN", "")
	if code, _, errs = cli(t, append(g, "renew")...); code != 122 {
		t.Fatalf("renew without the token: exit %d, %s; want 122 (lost)", code, errs)
	}
	if quarantined() {
		t.Fatal("a renewal without the token was taken as evidence of lost data")
	}
	t.Setenv("GOVERNOR_TOKEN", token)
	if code, _, errs = cli(t, append(g, "renew")...); code != 122 || !strings.Contains(errs, "is lost") {
		t.Fatalf("renew with $GOVERNOR_TOKEN: exit %d, %s; want 122 (lost)", code, errs)
	}
	if !quarantined() {
		t.Fatal("renew with $GOVERNOR_TOKEN after FLUSHALL and a newcomer: no quarantine event")
	}
	if code, _, errs = cli(t, append(g, "acquire", "heavy", "--limit", "1")...); code != 73 {
		t.Fatalf("acquire in the quarantine: exit %d, %s; want 73 (busy)", code, errs)
	}
}

// TestRenewTokenBad: a token that is no token exits 125 naming it and
// what is allowed, from --token and from $GOVERNOR_TOKEN; --token with
// more or fewer than one lease named to touch too.
func TestRenewTokenBad(t *testing.T) {
	g := []string{"--backend", "file", "--dir", t.TempDir() + "/state", "--config", emptyConfig(t)}
	code, out, errs := cli(t, append(g, "acquire", "heavy", "--limit", "1")...)
	if code != 0 {
		t.Fatalf("acquire: exit %d, %s", code, errs)
	}
	lease := strings.Fields(out)[0]
	for _, c := range []struct {
		env  string
		args []string
		want string
	}{
		{"", []string{"renew", lease, "--token", "abc"}, `"abc" is not a fencing token; allowed: a whole number from 1`},
		{"", []string{"renew", lease, "--token", "0"}, `"0" is not a fencing token`},
		{"", []string{"touch", lease, "--token", "-2"}, `"-2" is not a fencing token`},
		{"x7", []string{"renew", lease}, `$GOVERNOR_TOKEN: "x7" is not a fencing token`},
		{"", []string{"touch", lease, lease, "--token", "5"}, "--token 5 names the token of one lease; give that lease's handle alone (2 given)"},
		{"", []string{"touch", "--token", "5"}, "(0 given)"},
	} {
		t.Setenv("GOVERNOR_TOKEN", c.env)
		if code, _, errs := cli(t, append(append([]string{}, g...), c.args...)...); code != 125 || !strings.Contains(errs, c.want) {
			t.Errorf("%v (GOVERNOR_TOKEN=%q): exit %d, %q; want 125 and %q", c.args, c.env, code, errs, c.want)
		}
	}
	t.Setenv("GOVERNOR_TOKEN", strings.Fields(out)[1])
	if code, _, errs := cli(t, append(g, "renew", lease)...); code != 0 {
		t.Fatalf("renew with its token: exit %d, %s", code, errs)
	}
}
