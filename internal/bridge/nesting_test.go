package bridge_test

import (
	"io"
	"strings"
	"testing"
)

// TestProviderAcquireNests: provider_acquire with the env of a run that
// holds the provider's slot (GOVERNOR_HELD) joins that hold, as acquire
// and a nested `governor run --provider` do, where without it a
// max_concurrency 1 provider is busy.
func TestProviderAcquireNests(t *testing.T) {
	backends(t, func(t *testing.T, st store) {
		inR, inW := io.Pipe()
		a := startWith(t, st, catalogOf(t, "providers:\n  anthropic: {max_concurrency: 1}\n"), inR, inW)
		a.hello()
		outer := a.call("provider_acquire", map[string]any{"provider": "anthropic"})
		env, _ := outer["env"].(map[string]any)
		if env["GOVERNOR_HELD"] == nil {
			t.Fatalf("outer lease's env %v; want GOVERNOR_HELD", outer["env"])
		}
		if e := a.fail("provider_acquire", map[string]any{"provider": "anthropic", "if_busy": "fail"}); e["kind"] != "busy" {
			t.Fatalf("without env: %v; want busy", e)
		}
		inner := a.call("provider_acquire", map[string]any{"provider": "anthropic", "if_busy": "fail", "env": env})
		a.call("provider_release", map[string]any{"lease": inner["lease"]})
		a.call("provider_release", map[string]any{"lease": outer["lease"]})
	})
}

// TestLockOrderRefusalIsAFailure: a nested acquire refused by the lock
// order (it wants a resource before one its ancestor holds) is bad
// input, kind failure (125), never a backend error to retry.
func TestLockOrderRefusalIsAFailure(t *testing.T) {
	backends(t, func(t *testing.T, st store) {
		inR, inW := io.Pipe()
		a := startWith(t, st, emptyCatalog(t), inR, inW)
		a.hello()
		outer := a.call("acquire", map[string]any{"resources": []string{"b"}, "limit": 1})
		e := a.fail("acquire", map[string]any{"resources": []string{"a"}, "limit": 1, "env": outer["env"]})
		if e["kind"] != "failure" || e["code"] != float64(125) || !strings.Contains(e["message"].(string), "lock order") {
			t.Fatalf("a before b held by the ancestor: %v; want kind failure naming the lock order", e)
		}
		a.call("acquire", map[string]any{"resources": []string{"a"}, "limit": 1, "if_busy": "fail"}) // nothing was left held
	})
}
