package mkdirslot

import "github.com/governor-dev/governor/governor"

// AddHold reads DIR's slot, the one bound to st's resource, and counts a
// hold governor's leases do not show (the wrapper's, or another tool's)
// in st.Used: one slot, up to the limit (a governor waiter that holds the
// lease while it polls the slot already fills it). It returns the holder
// and whether it holds outside governor: slot.d is not free and no lease
// of st names its pid. On an error (DIR unusable) st is left as it was.
// slots, the status page and /metrics ask it, so that the slot never looks
// free while the wrapper holds it.
func AddHold(st *governor.Status, dir string) (Holder, bool, error) {
	h, err := Inspect(dir)
	if err != nil || h.State == Free {
		return h, false, err
	}
	for _, x := range st.Holders {
		if h.PID != 0 && x.PID == h.PID {
			return h, false, nil
		}
	}
	if st.Used < max(st.Limit, 1) {
		st.Used++
	}
	return h, true, nil
}
