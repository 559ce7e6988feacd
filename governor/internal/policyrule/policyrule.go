// Package policyrule is the arithmetic of a queue policy's rules, once
// (governor.Policy says the rules): the file backend grants by it, an
// acquire checks a weight by it, and a refusal is explained by it.
// lib-policy.lua's pol_allows, pol_reserved and pol_never are its Lua
// twins (the differential test holds them together). It imports nothing
// of the module; governor.Policy.Rules gives a policy's rules.
package policyrule

// DefaultMaxOvertakes is the anti-starvation bound when a policy with
// classes names none (governor.DefaultMaxOvertakes).
const DefaultMaxOvertakes = 10

// defaultClassName names the class of a waiter without a priority, when
// the policy has a class of that name; otherwise it is the lowest class.
const defaultClassName = "default"

// Class is what the rules read of a priority class.
type Class struct {
	Name    string
	Reserve int // the slots lower classes may never take from this one
	Cap     int // the slots this class holds at most (0: none)
}

// Rules is what the rules read of a policy.
type Rules struct {
	Classes      []Class // highest first; empty: one class
	MaxOvertakes int     // 0: DefaultMaxOvertakes
	Fair         bool
	FairWeights  map[string]int
	FairCap      int // the slots one fair key holds at most (0: none)
}

// Use is what a resource's holders hold, as the rules count it.
type Use struct {
	Limit int // the limit in force
	Used  int // the weight held
	// Classes is the weight held in each class, by index (missing ones
	// hold nothing).
	Classes []int
	// Keys is the weight held by each fair key.
	Keys map[string]int
}

func (u Use) class(c int) int {
	if c < 0 || c >= len(u.Classes) {
		return 0
	}
	return u.Classes[c]
}

// Verdict is what the rules decide of a grant: allowed, or the rule that
// refuses it.
type Verdict int

// The verdicts, in the order the rules are applied.
const (
	Allows     Verdict = iota
	Capped             // the class's cap
	FairCapped         // the fair key's fair_cap
	Full               // the free slots
	Reserved           // the reserves of the classes above
)

// BlocksBelow tells whether a refusal by v stops the classes below from
// being served before the refused head: the free slots and the reserves
// do, a cap (of the head's class or key only) does not.
func (v Verdict) BlocksBelow() bool {
	return v == Full || v == Reserved
}

// ClassIndex returns the index of the class a waiter naming priority is
// in (0 when r has no classes). An empty priority is the class named
// "default" if r has it, else the lowest class; a priority r does not
// have is ok=false.
func (r Rules) ClassIndex(priority string) (int, bool) {
	if len(r.Classes) == 0 {
		return 0, priority == ""
	}
	name := priority
	if name == "" {
		name = defaultClassName
	}
	for i, c := range r.Classes {
		if c.Name == name {
			return i, true
		}
	}
	if priority == "" {
		return len(r.Classes) - 1, true
	}
	return 0, false
}

// ClassOf is the class (index) of a request naming priority under r: the
// class it names, or, when r lacks it (a process asking under another
// policy than the one in force), the class of no name.
func (r Rules) ClassOf(priority string) int {
	if c, ok := r.ClassIndex(priority); ok {
		return c
	}
	c, _ := r.ClassIndex("")
	return c
}

// Overtakes is the anti-starvation bound in force.
func (r Rules) Overtakes() int {
	if r.MaxOvertakes == 0 {
		return DefaultMaxOvertakes
	}
	return r.MaxOvertakes
}

// IsFair tells whether fair keys take turns.
func (r Rules) IsFair() bool { return r.Fair || len(r.FairWeights) > 0 || r.FairCap > 0 }

// FairWeight is key's weight.
func (r Rules) FairWeight(key string) int {
	if w := r.FairWeights[key]; w > 0 {
		return w
	}
	return 1
}

// Admit decides whether weight w of class c with fair key key may be
// granted now, given what is held: by c's cap, key's fair_cap (a request
// without a fair key has none), the free slots, then the slots the
// classes above c reserve and do not use.
func (r Rules) Admit(u Use, c int, key string, w int) Verdict {
	if c < len(r.Classes) && r.Classes[c].Cap > 0 && u.class(c)+w > r.Classes[c].Cap {
		return Capped
	}
	if r.FairCap > 0 && key != "" && u.Keys[key]+w > r.FairCap {
		return FairCapped
	}
	free := u.Limit - u.Used
	if w > free {
		return Full
	}
	if free-w < Sum(r.UnusedReserves(u, c)) {
		return Reserved
	}
	return Allows
}

// UnusedReserves is, for each class above c (by index), the slots it
// reserves and does not use: what c may not take.
func (r Rules) UnusedReserves(u Use, c int) []int {
	var out []int
	for j := 0; j < c && j < len(r.Classes); j++ {
		out = append(out, max(0, r.Classes[j].Reserve-u.class(j)))
	}
	return out
}

// Never decides whether weight w of class c with fair key key can never
// be granted under limit, whatever is held: Capped when it is over c's
// cap, Reserved when over the limit less the reserves of the classes
// above, FairCapped when over the fair_cap; else Allows.
func (r Rules) Never(limit, c int, key string, w int) Verdict {
	switch {
	case c < len(r.Classes) && r.Classes[c].Cap > 0 && w > r.Classes[c].Cap:
		return Capped
	case w > limit-r.ReservedAbove(c):
		return Reserved
	case r.FairCap > 0 && key != "" && w > r.FairCap:
		return FairCapped
	}
	return Allows
}

// ReservedAbove is the sum of the reserves of the classes above class.
func (r Rules) ReservedAbove(class int) int {
	n := 0
	for j := 0; j < class && j < len(r.Classes); j++ {
		n += r.Classes[j].Reserve
	}
	return n
}

// Sum adds ns up.
func Sum(ns []int) int {
	n := 0
	for _, x := range ns {
		n += x
	}
	return n
}
