package governor

import "github.com/governor-dev/governor/governor/internal/policyrule"

// Rules is what the arithmetic of p's rules reads (package
// governor/internal/policyrule, its one home): the file backend grants
// by it, an acquire checks a weight by it, a refusal is explained by it.
func (p Policy) Rules() policyrule.Rules {
	r := policyrule.Rules{MaxOvertakes: p.MaxOvertakes, Fair: p.Fair, FairWeights: p.FairWeights, FairCap: p.FairCap}
	if len(p.Classes) > 0 {
		r.Classes = make([]policyrule.Class, len(p.Classes))
		for i, c := range p.Classes {
			r.Classes[i] = policyrule.Class{Name: c.Name, Reserve: c.Reserve, Cap: c.Cap}
		}
	}
	return r
}

// policyUse is what st's holders hold under the policy in force, by the
// classes and fair keys they declared.
func (st Status) policyUse() policyrule.Use {
	r := st.Policy.Rules()
	u := policyrule.Use{Limit: st.Limit, Used: st.Used, Classes: make([]int, max(1, len(st.Policy.Classes))), Keys: map[string]int{}}
	for _, h := range st.Holders {
		if c, ok := r.ClassIndex(h.Priority); ok && h.Priority != "" {
			u.Classes[c] += h.Weight
		}
		if h.FairKey != "" {
			u.Keys[h.FairKey] += h.Weight
		}
	}
	return u
}
