package policyrule_test

import (
	"fmt"
	"testing"

	"github.com/governor-dev/governor/governor/internal/policyrule"
)

// rules: critical reserves 2, default is capped at 3, batch has neither;
// one fair key may hold 2.
var rules = policyrule.Rules{Classes: []policyrule.Class{{Name: "critical", Reserve: 2}, {Name: "default", Cap: 3}, {Name: "batch"}}, FairCap: 2}

func TestPolicyAdmit(t *testing.T) {
	use := func(limit, used int, classes []int, keys map[string]int) policyrule.Use {
		return policyrule.Use{Limit: limit, Used: used, Classes: classes, Keys: keys}
	}
	for _, tc := range []struct {
		name   string
		p      policyrule.Rules
		u      policyrule.Use
		class  int
		key    string
		weight int
		want   policyrule.Verdict
	}{
		{"idle", rules, use(6, 0, nil, nil), 2, "", 1, policyrule.Allows},
		{"the reserve above is unused", rules, use(6, 3, []int{0, 0, 3}, nil), 2, "", 2, policyrule.Reserved},
		{"up to the reserve", rules, use(6, 3, []int{0, 0, 3}, nil), 2, "", 1, policyrule.Allows},
		{"the reserve is used by its class", rules, use(6, 4, []int{2, 0, 2}, nil), 2, "", 2, policyrule.Allows},
		{"the reserve is not the reserving class's to respect", rules, use(6, 4, []int{0, 0, 4}, nil), 0, "", 2, policyrule.Allows},
		{"no free slot", rules, use(6, 6, []int{2, 0, 4}, nil), 0, "", 1, policyrule.Full},
		{"full wins over the reserve", rules, use(6, 5, []int{0, 0, 5}, nil), 2, "", 2, policyrule.Full},
		{"the class's cap", rules, use(6, 3, []int{0, 3, 0}, nil), 1, "", 1, policyrule.Capped},
		{"the cap wins over full", rules, use(3, 3, []int{0, 3, 0}, nil), 1, "", 1, policyrule.Capped},
		{"within the cap", rules, use(6, 2, []int{0, 2, 0}, nil), 1, "", 1, policyrule.Allows},
		{"the fair cap", rules, use(6, 2, []int{0, 0, 2}, map[string]int{"alice": 2}), 2, "alice", 1, policyrule.FairCapped},
		{"another key", rules, use(6, 2, []int{0, 0, 2}, map[string]int{"alice": 2}), 2, "bob", 1, policyrule.Allows},
		{"no fair key: no fair cap", rules, use(6, 2, []int{0, 0, 2}, map[string]int{"": 2}), 2, "", 1, policyrule.Allows},
		{"the class cap before the fair cap", rules, use(6, 3, []int{0, 3, 0}, map[string]int{"alice": 2}), 1, "alice", 1, policyrule.Capped},
		{"no classes: the limit", policyrule.Rules{Fair: true}, use(2, 1, nil, nil), 0, "k", 1, policyrule.Allows},
		{"no classes: full", policyrule.Rules{Fair: true}, use(2, 2, nil, nil), 0, "k", 1, policyrule.Full},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.p.Admit(tc.u, tc.class, tc.key, tc.weight); got != tc.want {
				t.Fatalf("Admit(%+v, class %d, key %q, weight %d) = %v, want %v", tc.u, tc.class, tc.key, tc.weight, got, tc.want)
			}
		})
	}
}

func TestPolicyNever(t *testing.T) {
	for _, tc := range []struct {
		limit, class int
		key          string
		weight       int
		want         policyrule.Verdict
	}{
		{6, 0, "", 6, policyrule.Allows},
		{6, 1, "", 4, policyrule.Capped},
		{6, 1, "", 3, policyrule.Allows},
		{6, 2, "", 5, policyrule.Reserved},
		{6, 2, "", 4, policyrule.Allows},
		{6, 2, "alice", 3, policyrule.FairCapped},
		{6, 2, "", 3, policyrule.Allows}, // no fair key: no fair cap
	} {
		if got := rules.Never(tc.limit, tc.class, tc.key, tc.weight); got != tc.want {
			t.Errorf("Never(limit %d, class %d, key %q, weight %d) = %v, want %v", tc.limit, tc.class, tc.key, tc.weight, got, tc.want)
		}
	}
}

func TestPolicyUnusedReserves(t *testing.T) {
	p := policyrule.Rules{Classes: []policyrule.Class{{Name: "a", Reserve: 2}, {Name: "b", Reserve: 3}, {Name: "c"}}}
	u := policyrule.Use{Limit: 9, Used: 4, Classes: []int{1, 3, 0}}
	for c, want := range []string{"[]", "[1]", "[1 0]"} {
		if got := fmt.Sprint(p.UnusedReserves(u, c)); got != want {
			t.Errorf("UnusedReserves(class %d) = %s, want %s", c, got, want)
		}
	}
}

func TestPolicyClassOf(t *testing.T) {
	for prio, want := range map[string]int{"critical": 0, "default": 1, "batch": 2, "": 1, "unknown": 1} {
		if got := rules.ClassOf(prio); got != want {
			t.Errorf("ClassOf(%q) = %d, want %d", prio, got, want)
		}
	}
	if got := (policyrule.Rules{}).ClassOf("x"); got != 0 {
		t.Errorf("ClassOf without classes = %d, want 0", got)
	}
}
