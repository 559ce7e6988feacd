package redisbackend

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/governor-dev/governor/governor"
	scripts "github.com/governor-dev/governor/scripts-lua"
)

var renewManyScript = newScript(scripts.RenewMany)

var _ governor.BatchRenewer = (*Backend)(nil)

// MaxRenewBatch caps the leases one script call of RenewBatch renews:
// Redis runs nothing else while a script runs, and a renewal takes it
// about 15 µs, so a call blocks the server for about 1.5 ms at most.
const MaxRenewBatch = 100

// RenewBatch implements governor.BatchRenewer: renewmany.lua renews up to
// MaxRenewBatch leases per call, each exactly as Renew would; several
// calls go in one pipeline, a single one alone (as Renew's does). On a
// Cluster a call's keys must share one hash slot, so leases are grouped
// by slot first (the pipeline then sends each node its own calls): a
// call per slot in use (at most the number of resources held) and a
// round trip per node; on one server, one call per MaxRenewBatch leases
// and one round trip.
func (b *Backend) RenewBatch(ctx context.Context, rs []governor.Renewal) []governor.RenewalResult {
	out := make([]governor.RenewalResult, len(rs))
	if b.closed.Load() {
		for i := range out {
			out[i].Err = governor.ErrClosed
		}
		return out
	}
	watched := b.watchEviction(ctx, rs)
	// groups: indexes into rs, one script call each.
	groups := callGroups(b.rdb, len(rs), MaxRenewBatch, func(i int) string { return b.resource(rs[i].Key).keys[0] })
	const perLease = 6 // renew.lua's ARGV
	cmds := make([]*redis.Cmd, len(groups))
	keysOf := make([][]string, len(groups))
	argsOf := make([][]any, len(groups))
	for gi, g := range groups {
		keys := make([]string, 0, 6*len(g))
		args := make([]any, 1, 1+perLease*len(g))
		args[0] = perLease
		for _, i := range g {
			r := rs[i]
			rk := b.resource(r.Key)
			keys = append(keys, rk.keys...)
			ttl, mode := renewMode(r)
			a := b.renewArgs(rk, r.ID, r.Secret, r.Token, ttl, mode)
			if len(a) != perLease {
				panic(fmt.Sprintf("redisbackend: renew.lua takes %d ARGV, RenewBatch sends %d", len(a), perLease))
			}
			args = append(args, a...)
		}
		keysOf[gi], argsOf[gi] = keys, args
	}
	if len(groups) == 1 {
		// One call: sent as Renew's is (a pipeline of one may take a
		// connection of its own, whose handshake a slow link feels).
		cmds[0] = renewManyScript.Run(ctx, b.rdb, keysOf[0], argsOf[0]...)
	} else {
		_, _ = b.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
			for gi := range groups {
				cmds[gi] = renewManyScript.get().EvalSha(ctx, pipe, keysOf[gi], argsOf[gi]...)
			}
			return nil
		})
	}
	for gi, g := range groups {
		v, err := cmds[gi].Slice()
		if err != nil && len(groups) > 1 && strings.HasPrefix(err.Error(), "NOSCRIPT") {
			// Scripts flushed (a restart): this call loads it again.
			v, err = renewManyScript.Run(ctx, b.rdb, keysOf[gi], argsOf[gi]...).Slice()
		}
		for j, i := range g {
			out[i] = b.renewManyReply(rs[i], v, j, err)
		}
	}
	var spends []spendRenewal
	for i, r := range rs {
		if out[i].Err == nil && b.rides(r.Key, r.ID) {
			spends = append(spends, spendRenewal{r.Key.Project, r.ID, r.Secret, out[i].Expires})
		}
	}
	b.extendSpends(ctx, spends)
	<-watched
	return out
}

// renewManyReply reads lease j's part of renewmany.lua's reply v (err:
// the call's error) for r.
func (b *Backend) renewManyReply(r governor.Renewal, v []any, j int, err error) governor.RenewalResult {
	if err != nil {
		return governor.RenewalResult{Err: wrap("renew", err)}
	}
	rd := &reader{op: "renew", key: r.Key}
	if len(v) <= j {
		rd.fail("%d replies for more leases", len(v))
		return governor.RenewalResult{Err: rd.err}
	}
	one := rd.list(v[j], "a lease's reply")
	if rd.err != nil {
		return governor.RenewalResult{Err: rd.err}
	}
	if len(one) == 2 && one[0] == int64(-3) {
		return governor.RenewalResult{Err: wrap("renew", scriptError(rd.str(one[1], "the error")))}
	}
	exp, err := renewReply(b.resource(r.Key), r.Key, r.ID, one)
	return governor.RenewalResult{Expires: exp, Err: err}
}

// callGroups splits n requests into the script calls that carry them
// (indexes, in order): on one server runs of at most max; on a Cluster
// (or a Ring, which shards by hash tag too) a call's keys must share one
// hash slot, so requests are grouped by the hash tag of keyOf first, each
// group in runs of at most max.
func callGroups(rdb redis.UniversalClient, n, max int, keyOf func(i int) string) [][]int {
	if _, one := rdb.(*redis.Client); one {
		all := make([]int, n)
		for i := range all {
			all[i] = i
		}
		return chunks(all, max)
	}
	byTag := map[string][]int{}
	var order []string
	for i := range n {
		tag := hashTag(keyOf(i))
		if _, ok := byTag[tag]; !ok {
			order = append(order, tag)
		}
		byTag[tag] = append(byTag[tag], i)
	}
	var groups [][]int
	for _, tag := range order {
		groups = append(groups, chunks(byTag[tag], max)...)
	}
	return groups
}

// chunks splits idx into runs of at most max.
func chunks(idx []int, max int) [][]int {
	var out [][]int
	for len(idx) > max {
		out = append(out, idx[:max])
		idx = idx[max:]
	}
	if len(idx) > 0 {
		out = append(out, idx)
	}
	return out
}

// hashTag is the {hash tag} of a key governor builds: what decides its
// Cluster slot.
func hashTag(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return key[i+1 : i+1+j]
		}
	}
	return key
}

// scriptError is the error a lease's renewal raised inside
// renewmany.lua: a Redis error reply, as if its own call had returned it.
type scriptError string

func (e scriptError) Error() string { return string(e) }
func (scriptError) RedisError()     {}
