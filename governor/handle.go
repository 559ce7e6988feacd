package governor

import (
	"context"
	"crypto/rand"
	"crypto/sha1" // #nosec G505: preimage resistance only; Redis Lua offers redis.sha1hex alone
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/governor-dev/governor/governor/histogram"
)

// Lease ids are public: `governor slots`, busy messages, events and run
// records show them. What proves ownership of a lease is its secret, a
// random value only its holder (and the processes it hands it to) knows:
// the lease id is the SHA-1 of the secret, in hex, so a backend checks a
// secret without storing anything but the id, and every backend checks
// it the same way (OwnerProven here, proven() in scripts-lua/head.lua).
//
// Leases granted by a governor from before secrets have ids of 32 hex
// digits, which no secret hashes to. They are accepted without a secret
// for as long as they are held (their holders, older binaries, know no
// secret): anyone who knows such an id can still release it, as before.
const (
	// idLen is the length of a lease id that a secret proves: 40 hex
	// digits (SHA-1).
	idLen = 2 * sha1.Size
	// SecretLen is the length of a lease secret: 32 hex digits (128
	// random bits).
	SecretLen = 32
)

// HandleForm says what ParseHandle accepts, for error messages.
const HandleForm = "RESOURCE@LEASE_ID.SECRET as printed by 'governor acquire'"

// newSecret returns a new lease secret and the lease id it proves.
func newSecret() (secret, id string) {
	var b [SecretLen / 2]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("governor: crypto/rand failed: " + err.Error()) // never happens on Linux
	}
	secret = hex.EncodeToString(b[:])
	return secret, LeaseIDOf(secret)
}

// LeaseIDOf returns the lease id that secret proves: its SHA-1 in hex.
func LeaseIDOf(secret string) string {
	sum := sha1.Sum([]byte(secret)) // #nosec G401: see the package comment above
	return hex.EncodeToString(sum[:])
}

// OwnerProven reports whether secret proves the ownership of lease id:
// id is the SHA-1 of secret, or id is not idLen long (a lease granted
// before leases had secrets, accepted without one). Every backend asks
// it (the Redis scripts repeat it as proven() in head.lua) before it
// renews, releases, cancels or claims a lease; a refusal is ErrNotOwner.
func OwnerProven(id, secret string) bool {
	if len(id) != idLen {
		return true
	}
	return subtle.ConstantTimeCompare([]byte(LeaseIDOf(secret)), []byte(id)) == 1
}

// NotOwner is the error of a backend that refused a call whose secret
// does not prove lease id of key.
func NotOwner(key Key, id string) error {
	return fmt.Errorf("%w: lease %s of %s: the secret given does not prove it (a handle is %s)", ErrNotOwner, id, key, HandleForm)
}

// Handle names a lease and, with its secret, proves its ownership: what
// `governor acquire` prints, and what renew, release and `seq next`
// take. Its String form is RESOURCE@LEASE_ID.SECRET; never show it to
// other users (show the Lease ID instead).
type Handle struct {
	Resource string
	ID       string
	// Secret proves ID (see OwnerProven); "" in a handle that only names
	// a lease, as `governor slots` shows it.
	Secret string
	// Token is the lease's fencing token, 0 when unknown: it is not part
	// of the String form (`governor acquire` prints it beside). A renewal
	// by the handle carries it, so that one from another process is
	// evidence of lost data as the holder's own is (see Backend.Renew).
	Token int64
}

// String returns RESOURCE@LEASE_ID.SECRET, or RESOURCE@LEASE_ID without
// a secret.
func (h Handle) String() string {
	if h.Secret == "" {
		return h.Resource + "@" + h.ID
	}
	return h.Resource + "@" + h.ID + "." + h.Secret
}

// ParseHandle reads RESOURCE@LEASE_ID.SECRET (or RESOURCE@LEASE_ID, which
// names a lease without proving it). Lease ids and secrets are hex, so
// the last '@' splits the resource off. A malformed handle, or one
// whose secret does not prove its id, is ErrInvalid naming it.
func ParseHandle(s string) (Handle, error) {
	bad := func(why string) (Handle, error) {
		return Handle{}, invalid("lease handle %q: %s; expected %s", s, why, HandleForm)
	}
	at := strings.LastIndexByte(s, '@')
	if at < 0 {
		return bad("no '@'")
	}
	h := Handle{Resource: s[:at]}
	h.ID, h.Secret, _ = strings.Cut(s[at+1:], ".")
	switch {
	case h.Resource == "":
		return bad("no resource before '@'")
	case h.ID == "":
		return bad("no lease id after '@'")
	case !isHex(h.ID):
		return bad("the lease id is not hex digits")
	case strings.Contains(s[at+1:], ".") && h.Secret == "":
		return bad("no secret after '.'")
	case h.Secret != "" && (len(h.Secret) != SecretLen || !isHex(h.Secret)):
		return bad(fmt.Sprintf("the secret is not %d hex digits", SecretLen))
	case h.Secret != "" && !OwnerProven(h.ID, h.Secret):
		return bad("the secret does not belong to the lease id (copied incompletely?)")
	}
	if err := ValidateResource(h.Resource); err != nil {
		return Handle{}, fmt.Errorf("lease handle %q: %w", s, err)
	}
	return h, nil
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return s != ""
}

// Handle returns the lease's handle, secret included: pass it only to
// processes that may act as the holder (renew, release, nested runs).
func (l *Lease) Handle() Handle {
	return Handle{Resource: l.key.Resource, ID: l.id, Secret: l.secret, Token: l.token}
}

// CheckHandle is the one check of a claim to hold a lease: by a nested
// `governor run` (GOVERNOR_HELD), by `governor seq next` and `touch`.
// It returns the lease's holder when h's secret proves its id (see
// OwnerProven) and the backend lists it as held; ErrNotOwner when the
// secret is missing or wrong (the lease id alone is public); ErrNotHeld
// when the lease is not held. It changes nothing.
func (g *Governor) CheckHandle(ctx context.Context, h Handle) (Holder, error) {
	if err := ValidateResource(h.Resource); err != nil {
		return Holder{}, err
	}
	if !OwnerProven(h.ID, h.Secret) {
		return Holder{}, NotOwner(Key{g.project, h.Resource}, h.ID)
	}
	return g.Held(ctx, h.Resource, h.ID)
}

// Held returns the holder of lease id of resource while the backend lists
// it as held, ErrNotHeld when it does not. It proves nothing about who
// asks (a lease id is public): CheckHandle does. It changes nothing.
func (g *Governor) Held(ctx context.Context, resource, id string) (Holder, error) {
	if err := ValidateResource(resource); err != nil {
		return Holder{}, err
	}
	key := Key{g.project, resource}
	st, err := g.b.Status(ctx, key)
	if err != nil {
		return Holder{}, err
	}
	if x, ok := st.holder(id); ok {
		return x, nil
	}
	return Holder{}, fmt.Errorf("%w: lease %s of %s", ErrNotHeld, id, key)
}

// holder returns the holder of lease id in st, if it is listed.
func (st Status) holder(id string) (Holder, bool) {
	for _, x := range st.Holders {
		if x.LeaseID == id {
			return x, true
		}
	}
	return Holder{}, false
}

// ReleaseHandle frees the lease h names, on behalf of a process that does
// not hold the *Lease (a shell script's `governor release`). With the
// lease's secret (or for a lease granted before secrets) it is a plain
// release: nil, or ErrNotHeld when the lease is not held.
//
// Without the secret, h only names the lease, and freeing it is a
// takeover with the rules of Takeover: allowed when its owner is proven
// dead on this host or force is set, else an *OwnerAliveError. It is
// recorded as a takeover by this Governor's session (an event naming it,
// which the holder's next renewal reports), then the slots are released.
// A wrong secret is ErrNotOwner. Nothing changes on a refusal.
func (g *Governor) ReleaseHandle(ctx context.Context, h Handle, force bool) error {
	if err := ValidateResource(h.Resource); err != nil {
		return err
	}
	key := Key{g.project, h.Resource}
	if h.Secret != "" {
		return g.releaseOwn(ctx, key, h)
	}
	err := g.b.Release(ctx, key, h.ID, h.Secret)
	if !errors.Is(err, ErrNotOwner) {
		return err
	}
	if err := g.enter(); err != nil {
		return err
	}
	defer g.active.Done()
	st, err := g.b.Status(ctx, key)
	if err != nil {
		return err
	}
	target, ok := st.holder(h.ID)
	if !ok {
		return fmt.Errorf("%w: lease %s of %s", ErrNotHeld, h.ID, key)
	}
	if !force {
		if reason := g.alive(ctx, key, target); reason != "" {
			return &OwnerAliveError{Resource: h.Resource, Holder: target, Now: st.Now, Reason: reason}
		}
	}
	req, _, err := g.request(h.Resource, AcquireOptions{Limit: max(st.Limit, target.Weight), Weight: target.Weight, NoHeartbeat: true})
	if err != nil {
		return err
	}
	req.Takeover = h.ID
	if _, err := g.b.Acquire(ctx, req); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), DefaultReleaseTimeout)
	defer cancel()
	return g.b.Release(ctx, key, req.ID, req.Secret)
}

// releaseOwn releases the lease h proves and records how long it was
// held (histogram.Hold, on the backend's clock), as Lease.Release does for
// the process that acquired it: a lease taken by 'governor acquire' and
// freed by 'governor release' counts too. The hold is read before the
// release; a lease that cannot be read is released all the same.
func (g *Governor) releaseOwn(ctx context.Context, key Key, h Handle) error {
	return g.releaseOwnWith(ctx, key, h, func(ctx context.Context) error { return g.b.Release(ctx, key, h.ID, h.Secret) })
}

// releaseOwnWith is releaseOwn sending the release through free.
func (g *Governor) releaseOwnWith(ctx context.Context, key Key, h Handle, free func(ctx context.Context) error) error {
	var held time.Duration
	if st, err := g.b.Status(ctx, key); err == nil {
		if x, ok := st.holder(h.ID); ok {
			held = st.Now.Sub(x.AcquiredAt)
		}
	}
	err := free(ctx)
	if err == nil && held > 0 {
		g.rec.observe(key, histogram.Hold, held)
	}
	return err
}

// ReleaseHandleSettle is ReleaseHandle of h, which must carry its secret
// (the lease is yours), with the settle of spend reservation lease
// (SettleBudgets(lease, h.Secret, actual): a reservation made under the
// lease, proven by its secret) sent with the release
// (SettleRequest.Release: one round trip on Redis). The two are
// independent: it returns the settlement, with the release's error in
// its ReleaseErr (ErrNotHeld when the lease is not held: the settle
// happened all the same), and the settle's error.
func (g *Governor) ReleaseHandleSettle(ctx context.Context, h Handle, lease string, actual []BudgetAmount) (BudgetSettlement, error) {
	if err := ValidateResource(h.Resource); err != nil {
		return BudgetSettlement{ReleaseErr: err}, nil
	}
	if h.Secret == "" {
		return BudgetSettlement{ReleaseErr: fmt.Errorf("%w: the handle of lease %s has no secret; allowed: a handle RESOURCE@LEASE_ID.SECRET (release it with ReleaseHandle, settle apart)", ErrInvalid, h.ID)}, nil
	}
	actual = g.evidence(actual)
	var st BudgetSettlement
	var serr error
	rerr := g.releaseOwnWith(ctx, Key{g.project, h.Resource}, h, func(ctx context.Context) error {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), DefaultReleaseTimeout)
		defer cancel()
		st, serr = g.budgets.BudgetSettle(sctx, SettleRequest{Project: g.project, Lease: lease, Secret: h.Secret, Actual: actual, By: g.Identity(),
			Release: &h})
		return st.ReleaseErr
	})
	st.ReleaseErr = rerr
	return st, serr
}

// RenewHandle extends the lease h names to now+ttl (0: the lease's own
// TTL) on behalf of a process that does not hold the *Lease. h must carry
// the lease's secret (ErrNotOwner otherwise, changing nothing), unless
// the lease was granted before secrets. A lease that is gone is
// ErrLeaseLost; renew never re-acquires. h.Token, when known, goes with
// the renewal: on Redis, a lease gone from a state born after it (the
// data was lost) then holds new grants back (eventkind.Quarantine).
func (g *Governor) RenewHandle(ctx context.Context, h Handle, ttl time.Duration) (time.Time, error) {
	if err := ValidateResource(h.Resource); err != nil {
		return time.Time{}, err
	}
	if ttl != 0 {
		if err := validateTTL("lease TTL", ttl); err != nil {
			return time.Time{}, err
		}
	}
	return g.b.Renew(ctx, Renewal{Key: Key{g.project, h.Resource}, ID: h.ID, Secret: h.Secret, Token: h.Token, TTL: ttl})
}

// TouchHandle marks progress on the lease h names, for a process that
// does not hold the *Lease (`governor touch`, `governor renew`): see
// AcquireOptions.ProgressTimeout. h must carry the lease's secret
// (ErrNotOwner otherwise, changing nothing), unless the lease was granted
// before secrets. A lease that is gone or stalled is ErrLeaseLost (a
// *LeaseLostError when the backend knows why); h.Token goes with the
// mark as with RenewHandle's renewal.
func (g *Governor) TouchHandle(ctx context.Context, h Handle) error {
	if err := ValidateResource(h.Resource); err != nil {
		return err
	}
	_, err := g.b.Renew(ctx, Renewal{Key: Key{g.project, h.Resource}, ID: h.ID, Secret: h.Secret, Token: h.Token, Touch: true})
	return err
}
