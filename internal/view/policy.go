package view

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/governor-dev/governor/governor"
)

// PolicyText is p as the configuration spells it, in YAML flow style:
// what goes under resources.NAME to configure it, e.g.
// "{priorities: [critical, batch], reserve: [critical=1], max_wait: 30s}".
// Keys at their default are left out; "" for no policy (FIFO).
func PolicyText(p governor.Policy) string {
	if p.IsZero() {
		return ""
	}
	var parts []string
	add := func(key string, v any) { parts = append(parts, fmt.Sprintf("%s: %v", key, v)) }
	list := func(key string, items []string) {
		if len(items) > 0 {
			add(key, "["+strings.Join(items, ", ")+"]")
		}
	}
	var names, reserve, caps []string
	for _, c := range p.Classes {
		names = append(names, c.Name)
		if c.Reserve > 0 {
			reserve = append(reserve, fmt.Sprintf("%s=%d", c.Name, c.Reserve))
		}
		if c.Cap > 0 {
			caps = append(caps, fmt.Sprintf("%s=%d", c.Name, c.Cap))
		}
	}
	list("priorities", names)
	list("reserve", reserve)
	list("cap", caps)
	if p.MaxOvertakes != 0 && p.MaxOvertakes != governor.DefaultMaxOvertakes {
		add("max_overtakes", p.MaxOvertakes)
	}
	if p.Fair && len(p.FairWeights) == 0 && p.FairCap == 0 {
		add("fair", true)
	}
	var weights []string
	for _, k := range slices.Sorted(maps.Keys(p.FairWeights)) {
		weights = append(weights, fmt.Sprintf("%s=%d", k, p.FairWeights[k]))
	}
	list("fair_weights", weights)
	for _, kv := range []struct {
		key string
		n   int
	}{{"fair_cap", p.FairCap}, {"max_queue", p.MaxQueue}} {
		if kv.n != 0 {
			add(kv.key, kv.n)
		}
	}
	if p.MaxWait != 0 {
		add("max_wait", p.MaxWait)
	}
	if p.Eager {
		add("policy", "eager")
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// encodedPolicyText is PolicyText of a policy as a backend stores it
// (governor.Policy.Encode), or the encoding itself when it does not read.
func encodedPolicyText(enc string) string {
	p, err := governor.ParsePolicy(enc)
	if err != nil || enc == "" {
		return enc
	}
	return PolicyText(p)
}

// classUse is the weight each priority class of the policy in force
// holds, by the classes its holders declared; nil without classes.
func classUse(st governor.Status) map[string]int {
	if len(st.Policy.Classes) == 0 {
		return nil
	}
	use := map[string]int{}
	for _, c := range st.Policy.Classes {
		use[c.Name] = 0
	}
	for _, h := range st.Holders {
		if h.Priority != "" {
			use[h.Priority] += h.Weight
		}
	}
	return use
}
