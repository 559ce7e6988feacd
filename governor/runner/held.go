package runner

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/mkdirslot"
)

// HeldLease is a lease held by a run, as its descendants see it in
// GOVERNOR_HELD and GOVERNOR_TOKEN.
type HeldLease struct {
	Key     governor.Key
	LeaseID string
	Token   int64 // 0 when GOVERNOR_TOKEN does not name it
}

// FormatHeld returns the values of GOVERNOR_HELD and GOVERNOR_TOKEN for
// leases: comma-separated PROJECT/RESOURCE=LEASE_ID and
// PROJECT/RESOURCE=TOKEN entries. Project names have no '/', lease ids and
// tokens no '='; in RESOURCE, '%' and ',' are written %25 and %2C, so the
// first '/' and the last '=' of an entry split it.
func FormatHeld(leases []HeldLease) (held, tokens string) {
	var h, t []string
	for _, l := range leases {
		k := heldKey(l.Key)
		h = append(h, k+"="+l.LeaseID)
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
		out = append(out, HeldLease{Key: k, LeaseID: v, Token: toks[k]})
	}
	return out, first
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
	return ParseHeld(getenv(env, EnvHeld), getenv(env, EnvToken))
}

// Session is the session to declare: flag (--session) when set, else
// $GOVERNOR_SESSION from env, else "" (governor's default, host:pid). Run
// and every other command ask it.
func Session(flag string, env []string) string {
	if flag != "" {
		return flag
	}
	return getenv(env, EnvSession)
}

// getenv returns the last value of key in env, "" if none: a later
// duplicate wins, as in os/exec.
func getenv(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok {
			return v
		}
	}
	return ""
}

// childEnv returns env without the variables Run sets, followed by them.
func childEnv(env []string, held []HeldLease, session string, runIDs string) []string {
	out := make([]string, 0, len(env)+4)
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case EnvHeld, EnvToken, EnvSession, EnvRunIDs:
			continue
		}
		out = append(out, kv)
	}
	h, t := FormatHeld(held)
	return append(out, EnvHeld+"="+h, EnvToken+"="+t, EnvSession+"="+session, EnvRunIDs+"="+runIDs)
}

// HeavyLockHeld reports whether HEAVY_LOCK_HELD is non-empty in env: an
// ancestor (the with-heavy-lock wrapper, or a governor run that made the
// slot) holds the machine's mkdir slot, so a resource bound to it
// (Options.MkdirLocks) is neither acquired nor waited for, as for a
// lease in GOVERNOR_HELD. The variable is the wrapper's and proves
// nothing by itself; the wrapper trusts it the same way.
func HeavyLockHeld(env []string) bool {
	return getenv(env, mkdirslot.EnvHeld) != ""
}
