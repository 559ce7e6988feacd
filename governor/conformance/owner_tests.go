package conformance

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/eventkind"
)

// ownedReq is req with a lease id proven by a secret, as a Governor makes
// them.
func ownedReq(key governor.Key, limit, weight int, mode governor.Mode) governor.Request {
	var b [governor.SecretLen / 2]byte
	_, _ = rand.Read(b[:])
	r := req(key, limit, weight, mode)
	r.Secret = hex.EncodeToString(b[:])
	r.ID = governor.LeaseIDOf(r.Secret)
	return r
}

// The lease id is public: renewing, releasing, cancelling or claiming a
// lease needs its secret, and a refusal changes nothing (issue 18).
func (s *suite) ownerSecret(t *testing.T) {
	b, key := s.open(t, "owned")
	held := ownedReq(key, 1, 1, governor.Fail)
	mustAcquire(t, b, held, governor.Granted)
	waiter := ownedReq(key, 1, 1, governor.Wait)
	mustAcquire(t, b, waiter, governor.Queued)
	before := mustStatus(t, b, key)

	wrong := ownedReq(key, 1, 1, governor.Fail).Secret
	for _, secret := range []string{"", wrong} {
		if _, err := b.Renew(ctxT(t), governor.Renewal{Key: key, ID: held.ID, Secret: secret, Token: 0, TTL: time.Hour}); !errors.Is(err, governor.ErrNotOwner) {
			t.Fatalf("Renew with secret %q: %v, want ErrNotOwner", secret, err)
		}
		if err := b.Release(ctxT(t), key, held.ID, secret); !errors.Is(err, governor.ErrNotOwner) {
			t.Fatalf("Release with secret %q: %v, want ErrNotOwner", secret, err)
		}
		if err := b.Cancel(ctxT(t), key, held.ID, secret); !errors.Is(err, governor.ErrNotOwner) {
			t.Fatalf("Cancel of the holder with secret %q: %v, want ErrNotOwner", secret, err)
		}
		if err := b.Cancel(ctxT(t), key, waiter.ID, secret); !errors.Is(err, governor.ErrNotOwner) {
			t.Fatalf("Cancel of the waiter with secret %q: %v, want ErrNotOwner", secret, err)
		}
		claim := held
		claim.Secret, claim.New = secret, false
		if _, err := b.Acquire(ctxT(t), claim); !errors.Is(err, governor.ErrNotOwner) {
			t.Fatalf("Acquire (claim) of the holder's id with secret %q: %v, want ErrNotOwner", secret, err)
		}
		claim.New = true
		if _, err := b.Acquire(ctxT(t), claim); !errors.Is(err, governor.ErrNotOwner) {
			t.Fatalf("Acquire (new) with the holder's id and secret %q: %v, want ErrNotOwner", secret, err)
		}
	}
	after := mustStatus(t, b, key)
	if len(after.Holders) != 1 || after.Holders[0].LeaseID != held.ID || after.Holders[0].Expires.Sub(after.Holders[0].AcquiredAt) != before.Holders[0].Expires.Sub(before.Holders[0].AcquiredAt) ||
		after.Holders[0].Token != before.Holders[0].Token || len(after.Waiters) != 1 || after.Waiters[0].ID != waiter.ID ||
		after.Counters != before.Counters {
		t.Fatalf("refused calls changed the state:\nbefore %+v\nafter  %+v", before, after)
	}

	// (Expiries are compared as spans: the file backend shows its boot
	// clock's instants on a wall clock read anew by each Status.)

	// With the secret, everything works as before.
	if _, err := b.Renew(ctxT(t), governor.Renewal{Key: key, ID: held.ID, Secret: held.Secret, Token: 0, TTL: time.Minute}); err != nil {
		t.Fatalf("Renew with the secret: %v", err)
	}
	if err := b.Release(ctxT(t), key, held.ID, held.Secret); err != nil {
		t.Fatalf("Release with the secret: %v", err)
	}
	waiter.New = false
	mustAcquire(t, b, waiter, governor.Granted) // handed over, claimed
	if err := b.Cancel(ctxT(t), key, waiter.ID, waiter.Secret); err != nil {
		t.Fatalf("Cancel with the secret: %v", err)
	}
	if st := mustStatus(t, b, key); st.Used != 0 || len(st.Waiters) != 0 {
		t.Fatalf("after release and cancel: %+v", st)
	}
}

// Through a Governor: a handle with the secret releases; without it,
// releasing another's live lease is a takeover, refused unless forced,
// and recorded naming who did it; the holder learns it at its renewal.
func (s *suite) governorReleaseHandle(t *testing.T) {
	project := project()
	victim := newGovernor(t, s.h.Open(t), governor.Options{Project: project, Session: "victim"})
	thief := newGovernor(t, s.h.Open(t), governor.Options{Project: project, Session: "thief"})
	l := mustLease(t, victim, "slot", governor.AcquireOptions{Limit: 1, NoHeartbeat: true, TTL: time.Minute})
	l.Detach()
	public := governor.Handle{Resource: "slot", ID: l.ID()}
	// The victim runs on this host and is alive (the test process).
	if err := thief.ReleaseHandle(ctxT(t), public, false); !errors.Is(err, governor.ErrOwnerAlive) {
		t.Fatalf("release by the public id: %v, want ErrOwnerAlive", err)
	}
	if _, err := thief.RenewHandle(ctxT(t), public, 0); !errors.Is(err, governor.ErrNotOwner) {
		t.Fatalf("renew by the public id: %v, want ErrNotOwner", err)
	}
	if _, err := thief.CheckHandle(ctxT(t), public); !errors.Is(err, governor.ErrNotOwner) {
		t.Fatalf("CheckHandle by the public id: %v, want ErrNotOwner", err)
	}
	if h, err := victim.CheckHandle(ctxT(t), l.Handle()); err != nil || h.Token != l.Token() {
		t.Fatalf("CheckHandle with the secret: %+v, %v", h, err)
	}
	if st, err := victim.Status(ctxT(t), "slot"); err != nil || len(st.Holders) != 1 || st.Counters.Takeovers != 0 {
		t.Fatalf("refusals changed the state: %+v, %v", st, err)
	}
	if err := thief.ReleaseHandle(ctxT(t), public, true); err != nil {
		t.Fatalf("forced release by the public id: %v", err)
	}
	st, err := victim.Status(ctxT(t), "slot")
	if err != nil || st.Used != 0 || st.Counters.Takeovers != 1 {
		t.Fatalf("after the forced release: %+v, %v", st, err)
	}
	_, err = victim.RenewHandle(ctxT(t), l.Handle(), 0)
	var lost *governor.LeaseLostError
	if !errors.As(err, &lost) || lost.End.Kind != eventkind.Takeover || !strings.Contains(lost.Reason(), "session thief") {
		t.Fatalf("the victim's renewal: %v, want a LeaseLostError naming session thief", err)
	}
	// And the owner's own handle releases its lease.
	l2 := mustLease(t, victim, "slot", governor.AcquireOptions{Limit: 1, NoHeartbeat: true, TTL: time.Minute})
	l2.Detach()
	if err := thief.ReleaseHandle(ctxT(t), l2.Handle(), false); err != nil {
		t.Fatalf("release with the handle's secret: %v", err)
	}
	if err := thief.ReleaseHandle(ctxT(t), l2.Handle(), false); !errors.Is(err, governor.ErrNotHeld) {
		t.Fatalf("second release: %v, want ErrNotHeld", err)
	}
}
