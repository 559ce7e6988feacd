package governor_test

import (
	"context"
	"errors"
	"testing"

	"github.com/governor-dev/governor/governor"
)

// A degraded-mode policy is closed, open or local:N: ParseBackendDown and
// its String agree, and a policy that is none of them (open and local at
// once, a negative or too large local) is ErrInvalid before any call
// runs.
func TestBackendDownPolicy(t *testing.T) {
	for _, s := range []string{"closed", "open", "local:1", "local:3"} {
		pol, err := governor.ParseBackendDown(s)
		if err != nil || pol.String() != s {
			t.Errorf("ParseBackendDown(%q) = %v (%s), %v", s, pol, pol, err)
		}
	}
	g := newFileGovernor(t)
	for _, pol := range []governor.BackendDown{{Open: true, Local: 2}, {Local: -1}, {Local: governor.MaxLimit + 1}} {
		ran := false
		err := g.Provider("p", governor.ProviderLimits{MaxConcurrency: 1, OnBackendDown: pol}).Do(context.Background(), 0,
			func(context.Context) (int64, error) { ran = true; return 0, nil })
		if !errors.Is(err, governor.ErrInvalid) || ran {
			t.Errorf("%+v: Do = %v (ran %v); want ErrInvalid, fn not run", pol, err, ran)
		}
	}
}
