package acquire

// RecordResource is one resource of a wait record (governor run
// --record, a client's record=PATH through the bridge): its name, weight
// and the limit this process asked for, and whose lease holds it.
type RecordResource struct {
	Name   string `json:"name"`
	Weight int    `json:"weight"`
	Limit  int    `json:"limit"`
	// Nested is true when an ancestor run held it: this run neither
	// acquired nor released it, and Lease is the ancestor's.
	Nested bool   `json:"nested"`
	Lease  string `json:"lease,omitempty"`
	Token  int64  `json:"token,omitempty"`
}

// RecordOf is the one builder of a wait record's resources, whatever the
// way in: items as a plan resolved them (Plan.Items, Held.Items), each
// with the lease that holds it once acquired. nested is true when every
// item was held by an ancestor (so nothing was acquired).
func RecordOf(items []*Item) (rs []RecordResource, nested bool) {
	nested = len(items) > 0
	rs = make([]RecordResource, 0, len(items))
	for _, it := range items {
		r := RecordResource{Name: it.Name, Weight: it.Weight, Limit: it.Limit, Nested: it.Nested}
		switch {
		case it.Nested:
			r.Lease, r.Token = it.Held.LeaseID, it.Held.Token
		case it.Lease != nil:
			r.Lease, r.Token = it.Lease.ID(), it.Lease.Token()
		}
		nested = nested && it.Nested
		rs = append(rs, r)
	}
	return rs, nested
}
