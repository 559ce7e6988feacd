package conformance

import (
	"errors"
	"strings"
	"testing"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/eventkind"
)

// policyCancelOthers: cancel-in-progress does not stop another OS user's
// holder without CancelOthers (issue 24.19): ErrInvalid naming the holder
// and its user, nothing changed; with it, the holder is cancelled and the
// event names the user and session that cancelled it.
func (s *suite) policyCancelOthers(t *testing.T) {
	b, key := s.open(t, "deploy")
	h := preq(key, 1, 1, governor.Fail, governor.Policy{}, "", "")
	h.Supersede, h.Declaration.User = "main", "alice"
	mustAcquire(t, b, h, governor.Granted)
	latest := preq(key, 1, 1, governor.Wait, governor.Policy{}, "", "")
	latest.Supersede, latest.CancelInProgress = "main", true
	latest.Declaration.User, latest.Declaration.Session = "bob", "bob-laptop"
	_, err := b.Acquire(ctxT(t), latest)
	if !errors.Is(err, governor.ErrInvalid) || !strings.Contains(err.Error(), h.ID) || !strings.Contains(err.Error(), "alice") {
		t.Fatalf("bob cancelling alice's holder in progress: %v; want ErrInvalid naming the holder and alice", err)
	}
	if _, err := b.Renew(ctxT(t), governor.Renewal{Key: key, ID: h.ID, Secret: "", Token: 0, TTL: 0}); err != nil {
		t.Fatalf("alice's holder after a refused cancel: %v; want it renewed", err)
	}
	if st := mustStatus(t, b, key); len(st.Waiters) != 0 {
		t.Fatalf("a refused cancel left waiters %+v", st.Waiters)
	}
	// With CancelOthers, bob may.
	latest.CancelOthers = true
	mustAcquire(t, b, latest, governor.Queued)
	if e := lastEvent(t, b, key, eventkind.CancelledInProgress); !strings.Contains(e.Detail, "user bob") ||
		!strings.Contains(e.Detail, "session bob-laptop") {
		t.Fatalf("cancelled_in_progress event %+v; want it naming user bob and session bob-laptop", e)
	}
}
