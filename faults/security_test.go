package faults_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/eventkind"
	"github.com/governor-dev/governor/governor/histogram"
	"github.com/governor-dev/governor/governor/redisbackend"
	"github.com/governor-dev/governor/internal/redistest"
)

// aclCommands is every command governor needs: the client's own (the
// connection handshake, the notification subscription, scripts, the
// resource index, the rate counters) and, since Redis checks a script's
// commands against the caller's permissions, every command the Lua
// scripts call. Keys are confined to gov:* and channels to gov:notify:*.
var aclCommands = []string{
	// connection: go-redis's handshake and the subscription's health
	// check (go-redis also sends CLIENT SETINFO, which Redis 7.2+ knows
	// and may be allowed with +client|setinfo; its refusal is ignored)
	"hello", "auth", "ping",
	// notifications
	"subscribe", "unsubscribe",
	// scripts, and the index and rate counters read by the client
	"evalsha", "eval", "script|load", "sadd", "smembers", "hget", "xrange",
	// forgetting an idle resource: its index entry (a check that no
	// acquire listed it again meanwhile reads its limit: hget)
	"srem",
	// reading maxmemory-policy when the backend opens (INFO memory)
	"info",
	// inside the scripts
	"time", "hmget", "hset", "hdel", "hincrby", "zadd", "zrem", "zrange", "zrangebyscore", "zcard",
	"zremrangebyscore", "zscore", "zrank", "xadd", "publish", "pexpire", "hgetall", "del",
}

// aclLine is the ACL rule of a least-privilege governor user (README).
func aclLine(user, password string) string {
	return fmt.Sprintf("user %s on >%s resetkeys ~gov:* resetchannels &gov:notify:* -@all +%s",
		user, password, strings.Join(aclCommands, " +"))
}

// aclWorkload runs every backend operation once through rdb, on every
// script path: grant, refusal listing holders, queueing and refreshing a
// queue entry, renewal,
// release handing the slot on with a notification, claim, expiry (with
// its event), reclaim, cancel, lost count, status, the index, and rate
// limits. It returns the first error.
func aclWorkload(rdb redis.UniversalClient, project string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := redisbackend.New(ctx, rdb)
	if err != nil {
		return err
	}
	defer b.Close()
	key := governor.Key{Project: project, Resource: "heavy"}
	req := func(id string, mode governor.Mode, ttl time.Duration) governor.Request {
		return governor.Request{Key: key, ID: id, Limit: 1, Weight: 1, TTL: ttl, Mode: mode, QueueTTL: time.Minute, New: true}
	}
	want := func(what string, r governor.Result, err error, o governor.Outcome) error {
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if r.Outcome != o {
			return fmt.Errorf("%s: %v, want %v", what, r.Outcome, o)
		}
		return nil
	}
	r, err := b.Acquire(ctx, req("a", governor.Fail, time.Minute))
	if err := want("grant", r, err, governor.Granted); err != nil {
		return err
	}
	r, err = b.Acquire(ctx, req("b", governor.Fail, time.Minute))
	if err := want("refusal", r, err, governor.Refused); err != nil {
		return err
	}
	notified, stop := b.Notify(context.Background(), key, "w")
	defer stop()
	r, err = b.Acquire(ctx, req("w", governor.Wait, 100*time.Millisecond))
	if err := want("queue", r, err, governor.Queued); err != nil {
		return err
	}
	if _, err := b.Renew(ctx, governor.Renewal{Key: key, ID: "a", Secret: "", Token: 0, TTL: time.Minute}); err != nil {
		return fmt.Errorf("renew: %w", err)
	}
	// Released by another process's backend: the waiter is told on its
	// channel (PUBLISH); a release of its own backend tells it in the
	// reply.
	other, err := redisbackend.New(ctx, rdb)
	if err != nil {
		return err
	}
	defer other.Close()
	if err := other.Release(ctx, key, "a", ""); err != nil {
		return fmt.Errorf("release: %w", err)
	}
	select {
	case <-notified:
	case <-time.After(5 * time.Second):
		return errors.New("the waiter was not notified of its grant")
	}
	w := req("w", governor.Wait, 100*time.Millisecond)
	w.New = false
	r, err = b.Acquire(ctx, w)
	if err := want("claim", r, err, governor.Granted); err != nil {
		return err
	}
	time.Sleep(150 * time.Millisecond) // w expires
	r, err = b.Acquire(ctx, req("c", governor.Fail, time.Minute))
	if err := want("grant after expiry", r, err, governor.Granted); err != nil {
		return err
	}
	if res, err := b.Admin(ctx, key, governor.Action{Kind: eventkind.Reclaimed, IDs: []string{"c"}, Token: r.Token}); err != nil || !res.Changed {
		return fmt.Errorf("reclaim: %v %w", res.Changed, err)
	}
	r, err = b.Acquire(ctx, req("d", governor.Fail, time.Minute))
	if err := want("grant", r, err, governor.Granted); err != nil {
		return err
	}
	r, err = b.Acquire(ctx, req("e", governor.Wait, time.Minute))
	if err := want("queue", r, err, governor.Queued); err != nil {
		return err
	}
	e := req("e", governor.Wait, time.Minute)
	e.New = false
	r, err = b.Acquire(ctx, e)
	if err := want("queue refresh", r, err, governor.Queued); err != nil {
		return err
	}
	if err := b.Cancel(ctx, key, "e", ""); err != nil {
		return fmt.Errorf("cancel: %w", err)
	}
	if err := b.Record(ctx, key, governor.Event{Kind: eventkind.Lost, LeaseID: "d", Token: 1, Detail: "a test"}); err != nil {
		return fmt.Errorf("count lost: %w", err)
	}
	st, err := b.Status(ctx, key)
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	if len(st.Holders) != 1 || st.Counters.ReclaimedExpiry != 1 || st.Counters.ReclaimedDead != 1 || st.Counters.Lost != 1 {
		return fmt.Errorf("status: %+v", st)
	}
	if names, err := b.Resources(ctx, project); err != nil || len(names) != 1 {
		return fmt.Errorf("resources: %v %w", names, err)
	}
	rk := governor.Key{Project: project, Resource: "provider:x"}
	lim := governor.RateLimit{Rate: 1, Period: time.Minute}
	for i := range 2 {
		res, err := b.RateReserve(ctx, governor.RateRequest{Key: rk, Requests: lim, Tokens: governor.PerMinute(100), NRequests: 1, NTokens: 10})
		if err != nil {
			return fmt.Errorf("rate reserve: %w", err)
		}
		if res.Allowed != (i == 0) {
			return fmt.Errorf("rate reserve %d: allowed %v", i, res.Allowed)
		}
	}
	if err := b.RateAdjust(ctx, governor.RateAdjustment{Key: rk, Tokens: governor.PerMinute(100), Delta: -5}); err != nil {
		return fmt.Errorf("rate adjust: %w", err)
	}
	if rs, err := b.RateStatus(ctx, rk); err != nil || rs.Limited != 1 {
		return fmt.Errorf("rate status: %+v %w", rs, err)
	}
	if names, err := b.Rates(ctx, project); err != nil || len(names) != 1 {
		return fmt.Errorf("rates: %v %w", names, err)
	}
	if err := b.Observe(ctx, key, histogram.Wait, []int64{1}, time.Millisecond); err != nil {
		return fmt.Errorf("observe: %w", err)
	}
	// An idle resource, forgotten: marked, then removed once the
	// (backend-level, tiny) retention has passed.
	idle := governor.Key{Project: project, Resource: "idle"}
	ir, err := b.Acquire(ctx, governor.Request{Key: idle, ID: "i", Limit: 1, Weight: 1, TTL: time.Minute, QueueTTL: time.Minute, New: true})
	if err := want("grant", ir, err, governor.Granted); err != nil {
		return err
	}
	if err := b.Release(ctx, idle, "i", ""); err != nil {
		return fmt.Errorf("release: %w", err)
	}
	if _, err := b.Forget(ctx, idle, time.Millisecond); err != nil {
		return fmt.Errorf("forget (mark): %w", err)
	}
	time.Sleep(5 * time.Millisecond)
	if ok, err := b.Forget(ctx, idle, time.Millisecond); err != nil || !ok {
		return fmt.Errorf("forget: %v %w", ok, err)
	}
	take := req("t", governor.Fail, time.Minute)
	take.Takeover = "d"
	tr, err := b.Acquire(ctx, take)
	if err := want("takeover", tr, err, governor.Granted); err != nil {
		return err
	}
	if evs, err := b.Events(ctx, key, time.Time{}); err != nil || len(evs) == 0 {
		return fmt.Errorf("events: %v %w", evs, err)
	}
	if n, err := b.NextSeq(ctx, project, "v", tr.Token); err != nil || n != 1 {
		return fmt.Errorf("seq: %d %w", n, err)
	}
	return b.Release(ctx, key, "t", "")
}

// Security: a Redis ACL user allowed only aclCommands on gov:* keys and
// gov:notify:* channels runs every operation; each command of the list is
// needed (without it the workload fails), except the few used only on
// paths a test does not reach quickly; and the user can do nothing else.
func TestACLLeastPrivilege(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	admin := client(t, s.Addr)
	ctx := context.Background()
	const user, password = "governor", "acl-pass-7c1e"
	setUser := func(t *testing.T, rule string) {
		t.Helper()
		args := []any{"ACL", "SETUSER"}
		for _, f := range strings.Fields(strings.TrimPrefix(rule, "user ")) {
			args = append(args, f)
		}
		if err := admin.Do(ctx, args...).Err(); err != nil {
			t.Fatalf("ACL SETUSER %s: %v", rule, err)
		}
	}
	asUser := func() *redis.Client {
		o := redisOptions(s.Addr)
		o.Username, o.Password = user, password
		rdb := redis.NewClient(o)
		t.Cleanup(func() { rdb.Close() })
		return rdb
	}
	line := aclLine(user, password)
	t.Logf("ACL line: %s", aclLine(user, "PASSWORD"))
	setUser(t, line)
	rdb := asUser()
	if err := admin.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := aclWorkload(rdb, uniq("acl")); err != nil {
		t.Fatalf("governor as the ACL user: %v", err)
	}
	// The CLI too.
	cfg := runConfig(t, uniq("aclcli"), "resources:\n  heavy: {limit: 1}\n")
	url := "redis://" + user + ":" + password + "@" + s.Addr + "/0"
	for _, args := range [][]string{{"run", "--resource", "heavy", "--", "true"}, {"slots", "--json"}} {
		if r := governorCLI(t, nil, append([]string{"--config", cfg, "--backend", "redis", "--redis-url", url}, args...)...); r.code != 0 {
			t.Fatalf("governor %s as the ACL user: exit %d %s", args[0], r.code, r.stderr)
		}
	}

	// Nothing else.
	for name, err := range map[string]error{
		"FLUSHALL":         rdb.FlushAll(ctx).Err(),
		"KEYS":             rdb.Keys(ctx, "*").Err(),
		"SET gov:x":        rdb.Set(ctx, "gov:x", "1", 0).Err(),
		"GET gov:x":        rdb.Get(ctx, "gov:x").Err(),
		"HSET other":       rdb.HSet(ctx, "other", "a", "1").Err(),
		"CONFIG SET":       rdb.ConfigSet(ctx, "appendonly", "yes").Err(),
		"SCRIPT FLUSH":     rdb.ScriptFlush(ctx).Err(),
		"script on other":  rdb.Eval(ctx, "return redis.call('HSET', KEYS[1], 'a', 1)", []string{"other"}).Err(),
		"script FLUSHDB":   rdb.Eval(ctx, "return redis.call('FLUSHDB')", nil).Err(),
		"PUBLISH other":    rdb.Publish(ctx, "other", "x").Err(),
		"SUBSCRIBE other":  subscribeErr(rdb, "other"),
		"ACL SETUSER self": rdb.Do(ctx, "ACL", "SETUSER", user, "+@all").Err(),
	} {
		if err == nil || !strings.Contains(err.Error(), "NOPERM") && !strings.Contains(err.Error(), "can't run this command") {
			t.Errorf("%s as the governor user: %v, want a permission error", name, err)
		}
	}

	// Each command is needed. ping and unsubscribe serve the
	// subscription's health check and shutdown, auth and hello the
	// handshake (Redis lets them through unlisted): they are kept,
	// unchecked.
	// eval: the backend loads its scripts when it opens, so EVAL serves
	// only a script cache flushed while it runs (a restarted server).
	// info: without it the eviction policy cannot be read, and the
	// backend opens after one warning line (TestEvictionPolicyUncheckable).
	unchecked := map[string]bool{"ping": true, "unsubscribe": true, "auth": true, "hello": true, "eval": true, "info": true}
	for _, c := range aclCommands {
		if unchecked[c] {
			continue
		}
		t.Run("without "+c, func(t *testing.T) {
			var rule []string
			for _, f := range strings.Fields(line) {
				if f != "+"+c {
					rule = append(rule, f)
				}
			}
			setUser(t, "user "+user+" reset")
			setUser(t, strings.Join(rule, " "))
			// An empty script cache, as after a restart: EVALSHA's
			// NOSCRIPT makes go-redis send EVAL.
			if err := admin.ScriptFlush(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			rdb := asUser()
			err := aclWorkload(rdb, uniq("acl"))
			if err == nil {
				t.Fatalf("governor works without %s: drop it from the ACL line", c)
			}
			if !strings.Contains(err.Error(), "NOPERM") && !strings.Contains(err.Error(), "no permissions") {
				t.Logf("without %s: %v", c, err)
			}
		})
	}
	setUser(t, "user "+user+" reset")
	setUser(t, line)
}

func subscribeErr(rdb *redis.Client, channel string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ps := rdb.Subscribe(ctx, channel)
	defer ps.Close()
	_, err := ps.Receive(ctx)
	return err
}

// Secrets never appear in what governor shows or stores: a run whose
// command has --api-key sk-..., a KEY=value argument and a --token=...,
// on a Redis URL with a password. Neither `governor slots` (table and
// --json), nor the --record file, nor governor's stderr, nor anything
// governor wrote to Redis contains them.
func TestSecretsNeverShown(t *testing.T) {
	t.Parallel()
	const password = "redis-PW-31f9e"
	secrets := []string{"sk-live-0123456789abcdef", "tok-9988776655", "sk-env-ffeeddccbbaa", password}
	s := redistest.Start(t, "--requirepass", password)
	project := uniq("secrets")
	cfg := runConfig(t, project, "resources:\n  heavy: {limit: 1}\n")
	url := "redis://:" + password + "@" + s.Addr + "/0"
	global := []string{"--config", cfg, "--backend", "redis", "--redis-url", url}
	rec := filepath.Join(t.TempDir(), "runs.jsonl")
	// The command holds the slot until the test makes the stop file (a
	// "sleep 3" ended before the refused run below on a loaded machine).
	stop := filepath.Join(t.TempDir(), "stop")

	args := append(append([]string(nil), global...), "run", "--resource", "heavy", "--record", rec, "--session", "sec",
		"--", "sh", "-c", `while [ ! -e "$SECRETS_STOP" ]; do sleep 0.1; done`, "agent", "--api-key", secrets[0], "--token="+secrets[1], "OPENAI_API_KEY="+secrets[2], "--verbose")
	c := exec.Command(governorBin(t), args...)
	c.Env = append(cleanEnv(), "SECRETS_STOP="+stop)
	var runErr strings.Builder
	c.Stderr = &runErr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	killAtCleanup(t, c)
	var shown []string
	eventually(t, 20*time.Second, "the run holding the slot", func() bool {
		r := governorCLI(t, nil, append(global, "slots", "--json", "heavy")...)
		return r.code == 0 && (strings.Contains(r.stdout, `"session": "sec"`) || strings.Contains(r.stdout, `"session":"sec"`))
	})
	for _, args := range [][]string{{"slots", "--json"}, {"slots"}, {"slots", "heavy"}} {
		r := governorCLI(t, nil, append(global, args...)...)
		if r.code != 0 {
			t.Fatalf("%q: exit %d %s", args, r.code, r.stderr)
		}
		shown = append(shown, "governor "+strings.Join(args, " ")+": "+r.stdout+r.stderr)
	}
	if !strings.Contains(shown[0], "--api-key") || !strings.Contains(shown[0], "--verbose") {
		t.Fatalf("slots does not show the command at all: %s", shown[0])
	}
	// While it holds the slot, a refused run prints the holder.
	r := governorCLI(t, nil, append(global, "run", "--resource", "heavy", "--", "true")...)
	if r.code != 73 {
		t.Fatalf("second run: exit %d %s", r.code, r.stderr)
	}
	shown = append(shown, "refusal: "+r.stderr)

	// Everything governor wrote to Redis.
	admin := redis.NewClient(&redis.Options{Addr: s.Addr, Password: password})
	defer admin.Close()
	ctx := context.Background()
	keys, err := admin.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		d, err := admin.Dump(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		shown = append(shown, "redis key "+k+": "+d)
	}
	if err := os.WriteFile(stop, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := c.Wait(); err != nil {
		t.Fatalf("run: %v\n%s", err, runErr.String())
	}
	shown = append(shown, "run stderr: "+runErr.String())
	b, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	shown = append(shown, "record: "+string(b))
	for _, out := range shown {
		for _, sec := range secrets {
			if strings.Contains(out, sec) {
				t.Errorf("secret %q shown in %s", sec, out)
			}
		}
	}
}
