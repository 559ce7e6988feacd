package governor

// The arithmetic of a queue policy's rules, once: the file backend grants
// by it, an acquire checks a weight by it, and a refusal is explained by
// it. lib-policy.lua's pol_allows, pol_reserved and pol_never are its Lua twins
// (the differential test holds them together).

// PolicyUse is what a resource's holders hold, as a policy's rules count
// it.
type PolicyUse struct {
	Limit int // the limit in force
	Used  int // the weight held
	// Classes is the weight held in each class, by index (missing ones
	// hold nothing).
	Classes []int
	// Keys is the weight held by each fair key.
	Keys map[string]int
}

func (u PolicyUse) class(c int) int {
	if c < 0 || c >= len(u.Classes) {
		return 0
	}
	return u.Classes[c]
}

// PolicyVerdict is what a policy's rules decide of a grant: allowed, or
// the rule that refuses it.
type PolicyVerdict int

// The verdicts, in the order the rules are applied.
const (
	PolicyAllows     PolicyVerdict = iota
	PolicyCapped                   // the class's cap
	PolicyFairCapped               // the fair key's fair_cap
	PolicyFull                     // the free slots
	PolicyReserved                 // the reserves of the classes above
)

// BlocksBelow tells whether a refusal by v stops the classes below from
// being served before the refused head: the free slots and the reserves
// do, a cap (of the head's class or key only) does not.
func (v PolicyVerdict) BlocksBelow() bool {
	return v == PolicyFull || v == PolicyReserved
}

// ClassOf is the class (index) of a request naming priority under p: the
// class it names, or, when p lacks it (a process asking under another
// policy than the one in force), the class of no name.
func (p Policy) ClassOf(priority string) int {
	if c, ok := p.ClassIndex(priority); ok {
		return c
	}
	c, _ := p.ClassIndex("")
	return c
}

// Admit decides whether weight w of class c with fair key key may be
// granted now, given what is held: by c's cap, key's fair_cap (a request
// without a fair key has none), the free slots, then the slots the
// classes above c reserve and do not use.
func (p Policy) Admit(u PolicyUse, c int, key string, w int) PolicyVerdict {
	if c < len(p.Classes) && p.Classes[c].Cap > 0 && u.class(c)+w > p.Classes[c].Cap {
		return PolicyCapped
	}
	if p.FairCap > 0 && key != "" && u.Keys[key]+w > p.FairCap {
		return PolicyFairCapped
	}
	free := u.Limit - u.Used
	if w > free {
		return PolicyFull
	}
	if free-w < sum(p.UnusedReserves(u, c)) {
		return PolicyReserved
	}
	return PolicyAllows
}

// UnusedReserves is, for each class above c (by index), the slots it
// reserves and does not use: what c may not take.
func (p Policy) UnusedReserves(u PolicyUse, c int) []int {
	var r []int
	for j := 0; j < c && j < len(p.Classes); j++ {
		r = append(r, max(0, p.Classes[j].Reserve-u.class(j)))
	}
	return r
}

// Never decides whether weight w of class c with fair key key can never
// be granted under limit, whatever is held: PolicyCapped when it is over
// c's cap, PolicyReserved when over the limit less the reserves of the
// classes above, PolicyFairCapped when over the fair_cap; else
// PolicyAllows.
func (p Policy) Never(limit, c int, key string, w int) PolicyVerdict {
	switch {
	case c < len(p.Classes) && p.Classes[c].Cap > 0 && w > p.Classes[c].Cap:
		return PolicyCapped
	case w > limit-p.reservedAbove(c):
		return PolicyReserved
	case p.FairCap > 0 && key != "" && w > p.FairCap:
		return PolicyFairCapped
	}
	return PolicyAllows
}

// reservedAbove is the sum of the reserves of the classes above class.
func (p Policy) reservedAbove(class int) int {
	n := 0
	for j := 0; j < class && j < len(p.Classes); j++ {
		n += p.Classes[j].Reserve
	}
	return n
}

func sum(ns []int) int {
	n := 0
	for _, x := range ns {
		n += x
	}
	return n
}

// policyUse is what st's holders hold under the policy in force, by the
// classes and fair keys they declared.
func (st Status) policyUse() PolicyUse {
	u := PolicyUse{Limit: st.Limit, Used: st.Used, Classes: make([]int, max(1, len(st.Policy.Classes))), Keys: map[string]int{}}
	for _, h := range st.Holders {
		if c, ok := st.Policy.ClassIndex(h.Priority); ok && h.Priority != "" {
			u.Classes[c] += h.Weight
		}
		if h.FairKey != "" {
			u.Keys[h.FairKey] += h.Weight
		}
	}
	return u
}
