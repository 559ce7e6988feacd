package acquire

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/governor-dev/governor/governor"
)

// Environment variables the pipeline reads (what ancestors hold) and
// gives a child (Held.Env).
const (
	EnvHeld  = "GOVERNOR_HELD"
	EnvToken = "GOVERNOR_TOKEN"
)

// HeldLease is a lease held by a run, as its descendants see it in
// GOVERNOR_HELD and GOVERNOR_TOKEN.
type HeldLease struct {
	Key     governor.Key
	LeaseID string
	// Secret proves LeaseID (governor.OwnerProven): a run passes it to
	// its command, which alone (with its descendants) can read it.
	Secret string
	Token  int64 // 0 when GOVERNOR_TOKEN does not name it
}

// Handle is the lease's handle, secret and token included.
func (h HeldLease) Handle() governor.Handle {
	return governor.Handle{Resource: h.Key.Resource, ID: h.LeaseID, Secret: h.Secret, Token: h.Token}
}

// FormatHeld returns the values of GOVERNOR_HELD and GOVERNOR_TOKEN for
// leases: comma-separated PROJECT/RESOURCE=LEASE_ID.SECRET (LEASE_ID
// alone for a lease without secret) and PROJECT/RESOURCE=TOKEN entries.
// Project names have no '/', lease ids, secrets and tokens no '='; in
// RESOURCE, '%' and ',' are written %25 and %2C, so the first '/' and
// the last '=' of an entry split it.
func FormatHeld(leases []HeldLease) (held, tokens string) {
	var h, t []string
	for _, l := range leases {
		k := heldKey(l.Key)
		v := l.LeaseID
		if l.Secret != "" {
			v += "." + l.Secret
		}
		h = append(h, k+"="+v)
		t = append(t, k+"="+strconv.FormatInt(l.Token, 10))
	}
	return strings.Join(h, ","), strings.Join(t, ",")
}

func heldKey(k governor.Key) string {
	r := strings.ReplaceAll(k.Resource, "%", "%25")
	return k.Project + "/" + strings.ReplaceAll(r, ",", "%2C")
}

// ParseHeld reads the values of GOVERNOR_HELD and GOVERNOR_TOKEN (either
// may be empty). It returns the leases in the order GOVERNOR_HELD lists
// them, and an error naming the first malformed entry; well-formed
// entries are returned even then.
func ParseHeld(held, tokens string) ([]HeldLease, error) {
	var first error
	bad := func(env, entry, why string) {
		if first == nil {
			first = fmt.Errorf("%s entry %q: %s; expected PROJECT/RESOURCE=VALUE", env, entry, why)
		}
	}
	toks := map[governor.Key]int64{}
	for _, e := range splitList(tokens) {
		k, v, err := splitEntry(e)
		if err != nil {
			bad(EnvToken, e, err.Error())
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			bad(EnvToken, e, "the token is not a number")
			continue
		}
		toks[k] = n
	}
	var out []HeldLease
	for _, e := range splitList(held) {
		k, v, err := splitEntry(e)
		if err != nil {
			bad(EnvHeld, e, err.Error())
			continue
		}
		id, secret, _ := strings.Cut(v, ".")
		out = append(out, HeldLease{Key: k, LeaseID: id, Secret: secret, Token: toks[k]})
	}
	return out, first
}

// ProvenHeld is the one rule deciding whether a lease that the
// environment says an ancestor holds (GOVERNOR_HELD; HEAVY_LOCK_HELD
// must ask it too) lets a nested run skip acquiring: the entry must
// carry the lease's secret (governor.Governor.CheckHandle), and the
// backend must still list the lease. Lease ids are public (slots, busy
// messages, records), so an id alone proves nothing; the secret is
// passed only in the environment of the holder's command, which other
// users cannot read (/proc/PID/environ is the owner's), on any host and
// with any backend. (An ancestor check through the process table was
// not chosen: a daemonised descendant is reparented, a run's tree
// outlives a killed governor, and a nested run on another host has no
// ancestor to find.)
//
// It returns nil when proven; an error wrapping governor.ErrNotOwner
// (no or a wrong secret) or governor.ErrNotHeld (the lease ended), which
// the caller reports, naming the variable, before acquiring as usual; or
// a backend error.
func ProvenHeld(ctx context.Context, g *governor.Governor, h HeldLease) error {
	_, err := g.CheckHandle(ctx, h.Handle())
	switch {
	case err == nil:
		return nil
	case errors.Is(err, governor.ErrNotOwner) && h.Secret == "":
		return fmt.Errorf("lease %s of %s is named without the secret that proves it (a lease id alone is public): %w",
			h.LeaseID, h.Key.Resource, governor.ErrNotOwner)
	case errors.Is(err, governor.ErrNotOwner):
		return fmt.Errorf("lease %s of %s is named with a secret that does not prove it (a wrong or altered entry): %w",
			h.LeaseID, h.Key.Resource, governor.ErrNotOwner)
	case errors.Is(err, governor.ErrNotHeld):
		return fmt.Errorf("lease %s of %s is no longer held: %w", h.LeaseID, h.Key.Resource, governor.ErrNotHeld)
	}
	return fmt.Errorf("checking the lease of %s that an ancestor holds: %w", h.Key.Resource, err)
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func splitEntry(e string) (governor.Key, string, error) {
	slash := strings.IndexByte(e, '/')
	eq := strings.LastIndexByte(e, '=')
	if slash <= 0 || eq <= slash+1 || eq == len(e)-1 {
		return governor.Key{}, "", fmt.Errorf("malformed")
	}
	res := strings.ReplaceAll(e[slash+1:eq], "%2C", ",")
	res = strings.ReplaceAll(res, "%25", "%")
	k := governor.Key{Project: e[:slash], Resource: res}
	if governor.ValidateProject(k.Project) != nil || governor.ValidateResource(k.Resource) != nil {
		return governor.Key{}, "", fmt.Errorf("bad project or resource name")
	}
	return k, e[eq+1:], nil
}

// HeldFromEnv reads GOVERNOR_HELD and GOVERNOR_TOKEN from env (the last
// value of each wins, as in a shell).
func HeldFromEnv(env []string) ([]HeldLease, error) {
	return ParseHeld(Getenv(env, EnvHeld), Getenv(env, EnvToken))
}

// Getenv returns the last value of key in env, "" if none: a later
// duplicate wins, as in os/exec.
func Getenv(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok {
			return v
		}
	}
	return ""
}
