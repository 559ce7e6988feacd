package main

// The allocation algorithms: given what each client of one resource
// wants, what each is entitled to. Each works on the server's view (the
// wants reported at the clients' last calls); what a client then gets is
// also bounded by the capacity not held by others (server.go), so that
// shares never sum above the limit whatever an algorithm says.

// waterLevel is max-min fairness (Doorman's FairShare as its docs
// describe it: equal parts, what a client leaves unused shared again
// equally among the rest, "in an iterative way"): the level L with
// sum(min(want, L)) = capacity, found by bisection. It is +Inf when every
// want fits.
func waterLevel(wants []float64, capacity float64) float64 {
	total, hi := 0.0, 0.0
	for _, w := range wants {
		total += w
		hi = max(hi, w)
	}
	if total <= capacity {
		return inf
	}
	lo := 0.0
	for range 50 {
		mid := (lo + hi) / 2
		s := 0.0
		for _, w := range wants {
			s += min(w, mid)
		}
		if s > capacity {
			hi = mid
		} else {
			lo = mid
		}
	}
	return lo
}

// proportional is Doorman's ProportionalShare as its docs describe it:
// everyone gets what it wants when the wants fit, or when it wants at
// most an equal share; otherwise the equal share plus a top-up, in
// proportion to its want above the equal share, from what the clients
// wanting less than an equal share leave.
type proportional struct {
	equal, extraCapacity, extraNeed, sumWants, capacity float64
}

func newProportional(wants []float64, clients int, capacity float64) proportional {
	p := proportional{capacity: capacity}
	if clients == 0 {
		return p
	}
	p.equal = capacity / float64(clients)
	for _, w := range wants {
		p.sumWants += w
		if w < p.equal {
			p.extraCapacity += p.equal - w
		} else {
			p.extraNeed += w - p.equal
		}
	}
	// Clients with a lease but no want count as wanting nothing.
	p.extraCapacity += float64(clients-len(wants)) * p.equal
	return p
}

func (p proportional) entitled(want float64) float64 {
	if p.sumWants <= p.capacity || want <= p.equal {
		return want
	}
	if p.extraNeed == 0 {
		return p.equal
	}
	return p.equal + (want-p.equal)*min(1, p.extraCapacity/p.extraNeed)
}
