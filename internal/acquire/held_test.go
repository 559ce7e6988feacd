package acquire

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/leasetest"
)

// A held lease named with a wrong secret is not said to be named without
// one (issue 25.12): each refusal says what was wrong.
func TestProvenHeldNamesWhatIsWrong(t *testing.T) {
	ctx := context.Background()
	g := leasetest.FileGovernor(t, t.TempDir(), governor.Options{Project: "p"})
	l, err := g.Acquire(ctx, "r", governor.AcquireOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	h := HeldLease{Key: l.Key(), LeaseID: l.ID()}
	for _, tc := range []struct{ secret, want string }{
		{"", "named without the secret"},
		{strings.Repeat("0", governor.SecretLen), "with a secret that does not prove it"},
	} {
		h.Secret = tc.secret
		err := ProvenHeld(ctx, g, h)
		if !errors.Is(err, governor.ErrNotOwner) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("secret %q: %v; want ErrNotOwner saying %q", tc.secret, err, tc.want)
		}
	}
}
