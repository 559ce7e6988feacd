//go:build linux

package main

import (
	"fmt"

	"github.com/governor-dev/governor/governor"
)

// capacityText is the report's line on the leased resource.
func capacityText() string {
	return fmt.Sprintf("Capacity leases on `%s` (max_concurrency %d, capacity_lease %v, capacity_refresh %v): the Python and TypeScript clients' bridges and a Go process's `Governor.Acquire` (four goroutines) grant its slots from their shares, a `governor run` loop takes them centrally beside them; its checks name it. Rate shares on `%s` (%d requests per minute, burst %d): two Go processes' `Provider.Do` grant its calls from their shares, a third reserves each centrally beside them.\n\n",
		resProvider, limProvider, capLease, capRefresh, resRate, rateRPM, rateBurst)
}

// noteShares counts the capacity shares in a read of the leased
// resource's holders: a share's lease is capLease long, a single
// grant's leaseTTL.
func (s *soak) noteShares(w *watch, st governor.Status) {
	shares, single := 0, 0
	for _, h := range st.Holders {
		if h.Expires.Sub(h.Heartbeat) <= (leaseTTL+capLease)/2 {
			single++
			continue
		}
		shares++
		s.worstAt("largest capacity share held of "+resProvider+" (slots)", float64(h.Weight))
	}
	if shares == 0 {
		return
	}
	w.shareReads++
	s.worstAt("most capacity shares of "+resProvider+" held at once", float64(shares))
	if single > 0 {
		w.mixedReads++
	}
}

// checkShares fails the run when no read of the leased resource saw a
// share: its use checks would then have tested central grants only.
func (s *soak) checkShares(w *watch) {
	s.mu.Lock()
	_, py := s.skipped["python client"]
	_, ts := s.skipped["typescript client"]
	s.mu.Unlock()
	s.check("capacity shares of "+resProvider+" seen held (reads)", w.shareReads)
	s.check("capacity shares and central grants of "+resProvider+" held together (reads)", w.mixedReads)
	if w.shareReads == 0 && !(py && ts) {
		s.violate("leased", "no capacity share of %s seen held in %v: its leases were not on", resProvider, s.o.duration)
	}
}
