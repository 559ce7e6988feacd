package bridge_test

import (
	"io"
	"strings"
	"testing"
)

// TestAcquirePlanErrorsAreFailures: what the acquire pipeline's plan
// refuses (acquire.NewPlan: a weight, a limit, a policy) is bad input,
// kind failure (125), naming the bad value, never a backend error; and
// nothing is left held.
func TestAcquirePlanErrorsAreFailures(t *testing.T) {
	inR, inW := io.Pipe()
	a := startWith(t, fileStore(t), catalogOf(t, "resources:\n  two: {limit: 2}\n"), inR, inW)
	a.hello()
	for _, tc := range []struct {
		op   string
		args map[string]any
		want string
	}{
		{"acquire", map[string]any{"resources": []string{"provider:nolimit"}}, "providers.nolimit.max_concurrency"},
		{"acquire", map[string]any{"providers": []string{"nolimit"}}, "providers.nolimit.max_concurrency"},
		{"acquire", map[string]any{"resources": []string{"two"}, "weight": -1}, "weight -1"},
		{"acquire", map[string]any{"resources": []string{"two:3"}}, "weight 3 for two is above its limit 2"},
		{"acquire", map[string]any{"resources": []string{"two"}, "limit": -3}, "limit -3"},
		{"acquire", map[string]any{"resources": []string{"two"}, "tokens": -1}, "tokens -1"},
		{"acquire", map[string]any{"resources": []string{"two"}, "if_busy": "later"}, "later"},
		{"acquire", map[string]any{"resources": []string{"two", "two"}}, "given twice"},
		{"acquire", map[string]any{"resources": []string{"two"}, "priority": "high"}, `"high"`},
		{"acquire", map[string]any{"resources": []string{"two"}, "fair_key": "k"}, "no fairness"},
		{"acquire", map[string]any{"providers": []string{""}}, `--provider ""`},
		{"provider_acquire", map[string]any{"provider": "unconfigured"}, "unconfigured"},
	} {
		e := a.fail(tc.op, tc.args)
		if e["kind"] != "failure" || e["code"] != float64(125) || !strings.Contains(e["message"].(string), tc.want) {
			t.Errorf("%s %v: %v; want kind failure naming %q", tc.op, tc.args, e, tc.want)
		}
	}
	a.call("acquire", map[string]any{"resources": []string{"two"}, "weight": 2}) // nothing of them was left held
}

// A resource with no limit anywhere (no configuration, no "limit") is a
// mutex for both clients, as in every lock tool: the first acquire gets
// it, the second is busy; a limit asked before is kept.
func TestAcquireNoLimitIsMutex(t *testing.T) {
	inR, inW := io.Pipe()
	a := startWith(t, fileStore(t), catalogOf(t, ""), inR, inW)
	a.hello()
	a.call("acquire", map[string]any{"resources": []string{"heavy"}})
	if e := a.fail("acquire", map[string]any{"resources": []string{"heavy"}}); e["kind"] != "busy" || e["code"] != float64(73) {
		t.Fatalf("second acquire of a resource with no limit: %v; want busy (a mutex)", e)
	}
	a.call("acquire", map[string]any{"resources": []string{"wide"}, "limit": 2})
	a.call("acquire", map[string]any{"resources": []string{"wide"}})
}
