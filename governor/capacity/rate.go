package capacity

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Rate shares (docs/capacity.md): a process leases part of a rate
// limit's requests (or tokens) per period and grants them locally from
// a token bucket of its own, with no round trip per request. A rate
// share rides on a backend's RateReserve (governor.RateRequest.Share):
// the request's Key and Requests (Tokens, with RateAsk.Tokens) name the
// limit, RateAsk the lease. The shares of a key's requests and those of
// its tokens are apart: a process leasing both holds two.
//
// A share is a rate (requests per the limit's period) and a burst, the
// same part of the limit's burst. The shares of a key never sum above
// its rate, and a reservation of one request at a time (the central
// path) is held to what they leave: the limit's rate less the shares',
// its burst less theirs. A local bucket starts empty, refills at its
// share's rate only while its lease is valid on its process's clock and
// no refresh is on its way, and keeps no more than its share's burst:
// so the local buckets and the central path together grant no more
// than the limit's rate and burst in any period, as the central limiter
// alone does.

// RateAsk is a refresh of a rate share (governor.RateRequest.Share).
type RateAsk struct {
	// ID names the lease; Secret proves it (the first refresh sets it).
	ID, Secret string
	// TTL is the lease's length: the share is counted until then
	// (backend time) unless refreshed.
	TTL time.Duration
	// Want is the requests per period the process wants now; 0 gives
	// the share back at once.
	Want int64
	// Held is the rate the process believes it holds, Token the Token of
	// its last answer (0: none, or its lease lapsed on its own clock).
	// With both, a lease that finds its state gone proves the state was
	// lost: the key learns (Learning) and the lease gets back up to
	// Held.
	Held, Token int64
	// Release ends the lease: its share and its want are gone at once.
	Release bool
	// Granted is how many requests the process has granted locally from
	// this lease since it opened it: a running count, counted as
	// Ask.Granted is (Tally), in the key's governor.RateStatus.LocalGrants.
	Granted int64
	// Tokens: the share is of the request's tokens limit
	// (governor.RateRequest.Tokens), not its requests.
	Tokens bool
}

// RateShare is the answer to a RateAsk (governor.RateResult.Share), on
// the backend's clock.
type RateShare struct {
	// Rate is the requests per the limit's period the process may grant
	// locally, Burst the most its bucket keeps, until Expires less its
	// margin on its own clock.
	Rate, Burst int64
	// Entitled is its fair share (FairShare) of the limit among the live
	// shares' wants and, while reservations of the central path are
	// denied, the central path wanting it all.
	Entitled int64
	// Waiting tells that others are entitled to more than they hold.
	Waiting bool
	// Token is the birth of the key's share state: sent back in the next
	// RateAsk, it tells a lost state from an expired lease.
	Token   int64
	Expires time.Time
	// Learning, when not zero, is the end of the learning mode after a
	// loss of the state: until then no share grows, a newcomer gets
	// nothing, and the central path is denied.
	Learning time.Time
}

// Validate checks a against a limit of rate requests (or tokens) per
// period: the error names the bad value and what is allowed.
func (a RateAsk) Validate(rate int64, period time.Duration) error {
	switch {
	case rate <= 0:
		return fmt.Errorf("rate share of a limit of %d %s; allowed: a limit of 1 or more", rate, a.Unit())
	case period < time.Millisecond || period > 24*time.Hour:
		return fmt.Errorf("rate share of a limit per %v; allowed: 1ms to 24h", period)
	case a.ID == "" || a.Secret == "":
		return fmt.Errorf("rate share id %q with secret set %v; allowed: both set", a.ID, a.Secret != "")
	case a.TTL < time.Second && !a.Release:
		return fmt.Errorf("rate share lease %v; allowed: 1s or more", a.TTL)
	case a.Want < 0 || a.Held < 0 || a.Token < 0 || a.Granted < 0:
		return fmt.Errorf("rate share want %d, held %d, token %d, granted %d; allowed: 0 or more", a.Want, a.Held, a.Token, a.Granted)
	case a.Want > rate || a.Held > rate:
		return fmt.Errorf("rate share want %d, held %d; allowed: at most the limit %d", a.Want, a.Held, rate)
	case a.Release && a.Want != 0:
		return fmt.Errorf("rate share release with want %d; allowed: 0", a.Want)
	}
	return nil
}

// Unit is what a's share counts: "requests" or "tokens".
func (a RateAsk) Unit() string {
	if a.Tokens {
		return "tokens"
	}
	return "requests"
}

// BurstOf is the burst of a share of rate out of a limit of limit with
// burst burst (0: limit): the same part of it, rounded down.
func BurstOf(rate, limit, burst int64) int64 {
	if burst <= 0 {
		burst = limit
	}
	if limit <= 0 {
		return 0
	}
	return int64(float64(rate) * float64(burst) / float64(limit))
}

// RateLease is one live rate share as a backend keeps it. Times are the
// backend's clock in its own unit (ns or µs), as int64.
type RateLease struct {
	Secret  string `json:"secret"`
	Rate    int64  `json:"rate"`
	Want    int64  `json:"want"`
	Expires int64  `json:"expires"`
	// Owner is the declaration of the process that holds it, as its
	// backend keeps it (governor.Declaration's JSON; "": none): the
	// proof of death that reclaims it early (Reap).
	Owner string `json:"owner,omitempty"`
	// Burst is the burst of its last answer; Granted the count of local
	// grants its last refresh reported (RateAsk.Granted).
	Burst   int64 `json:"burst,omitempty"`
	Granted int64 `json:"granted,omitempty"`
}

// RateHolder is one live rate share as governor.RateStatus reports it,
// on the backend's clock: the rate it wanted at its last refresh, the
// rate and burst it holds, and its count of local grants then (since
// it opened).
type RateHolder struct {
	ID                         string
	Want, Rate, Burst, Granted int64
	Expires                    time.Time
}

// RateLeases is a key's rate shares as a backend keeps them (the file
// backend as is; rate.lua the same steps in a hash).
type RateLeases struct {
	Leases map[string]RateLease `json:"leases,omitempty"`
	// Born is when the state was first written (0: never): a lease
	// whose Token differs proves it was lost since.
	Born int64 `json:"born,omitempty"`
	// Learn is the end of the learning mode (0: none); Waits until
	// when the central path counts as waiting (a denial's time plus
	// TTL, the last refresh's lease length, kept in TTL).
	Learn int64 `json:"learn,omitempty"`
	Waits int64 `json:"waits,omitempty"`
	TTL   int64 `json:"ttl,omitempty"`
	// Granted counts the local grants the leases reported (RateAsk.Tally).
	Granted int64 `json:"granted,omitempty"`
}

// Tally is how a backend counts a refresh's local grants, given the
// Granted it kept from the lease's last refresh (kept false: it keeps
// none): as Ask.Tally.
func (a RateAsk) Tally(last int64, kept bool) (add, keep int64) {
	return Ask{Granted: a.Granted}.Tally(last, kept)
}

// Holders are the live leases at now (times in the clock's unit), by
// ID; at converts a time to the backend's clock.
func (r *RateLeases) Holders(now int64, at func(int64) time.Time) []RateHolder {
	var out []RateHolder
	for id, l := range r.Leases {
		if l.Expires > now {
			out = append(out, RateHolder{ID: id, Want: l.Want, Rate: l.Rate, Burst: l.Burst, Granted: l.Granted, Expires: at(l.Expires)})
		}
	}
	slices.SortFunc(out, func(a, b RateHolder) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// Prune drops the leases expired at now.
func (r *RateLeases) Prune(now int64) {
	for id, l := range r.Leases {
		if l.Expires <= now {
			delete(r.Leases, id)
		}
	}
}

// Sum is the rates the live shares hold and their bursts, for a limit
// of limit with burst burst.
func (r *RateLeases) Sum(limit, burst int64) (rate, bursts int64) {
	for _, l := range r.Leases {
		rate += l.Rate
		bursts += BurstOf(l.Rate, limit, burst)
	}
	return rate, bursts
}

// ErrRateOwner is Refresh's error when the lease's secret is not its
// owner's.
var ErrRateOwner = fmt.Errorf("rate share: not the lease's owner")

// Release ends lease a.ID at now (nothing if it is not live).
func (r *RateLeases) Release(a RateAsk, now int64) error {
	r.Prune(now)
	if cur, ok := r.Leases[a.ID]; ok {
		if cur.Secret != a.Secret {
			return ErrRateOwner
		}
		add, _ := a.Tally(cur.Granted, true)
		r.Granted += add
		delete(r.Leases, a.ID)
	}
	return nil
}

// Refresh applies a (validated, not a release) at now for a limit of
// limit requests per period with burst burst; ttl is a.TTL in the
// clock's unit. The share shrinks to its entitlement at once and grows
// towards it only by the room that neither the other shares nor the
// central path's entitlement hold, never in the learning mode; while
// the key cools off (cooling) it is 0.
func (r *RateLeases) Refresh(a RateAsk, now, ttl, limit, burst int64, cooling bool) (RateShare, error) {
	r.Prune(now)
	cur, found := r.Leases[a.ID]
	if found && cur.Secret != a.Secret {
		return RateShare{}, ErrRateOwner
	}
	if r.Born == 0 {
		r.Born = now
	}
	lost := a.Token != 0 && a.Held > 0 && !found && a.Token != r.Born
	if lost {
		r.Learn = max(r.Learn, now+ttl)
	}
	learning := now < r.Learn
	if r.Leases == nil {
		r.Leases = map[string]RateLease{}
	}
	ws := []Wanter{{ID: a.ID, Want: int(a.Want)}}
	var others int64
	for id, l := range r.Leases {
		if id != a.ID {
			ws = append(ws, Wanter{ID: id, Want: int(l.Want)})
			others += l.Rate
		}
	}
	central := now < r.Waits
	if central {
		ws = append(ws, Wanter{ID: Queue, Want: int(limit)})
	}
	parts := FairShare(int(limit), ws)
	free := max(0, limit-others-cur.Rate-int64(parts[Queue]))
	share, _ := Ask{Held: int(a.Held)}.Next(State{Entitled: parts[a.ID], Held: int(cur.Rate), Free: int(free),
		Blocked: learning, Learning: learning && lost})
	if cooling {
		share = 0
	}
	add, granted := a.Tally(cur.Granted, found)
	r.Granted += add
	b := BurstOf(int64(share), limit, burst)
	r.Leases[a.ID] = RateLease{Secret: a.Secret, Rate: int64(share), Want: a.Want, Expires: now + ttl, Burst: b, Granted: granted}
	r.TTL = ttl
	waiting := central
	for id, l := range r.Leases {
		waiting = waiting || id != a.ID && int64(parts[id]) > l.Rate
	}
	return RateShare{Rate: int64(share), Burst: b, Entitled: int64(parts[a.ID]), Waiting: waiting,
		Token: r.Born}, nil
}

// Own records owner as the declaration of lease id's process.
func (r *RateLeases) Own(id, owner string) {
	if l, ok := r.Leases[id]; ok {
		l.Owner = owner
		r.Leases[id] = l
	}
}

// Reap drops the leases but id's whose owner dead proves dead, and
// reports whether it dropped any: their shares and wants are gone.
func (r *RateLeases) Reap(id string, dead func(owner string) bool) bool {
	reaped := false
	for lid, l := range r.Leases {
		if lid != id && l.Owner != "" && dead(l.Owner) {
			delete(r.Leases, lid)
			reaped = true
		}
	}
	return reaped
}

// Central is the limit the central path (a reservation without a share)
// of cost requests is held to at now, for a limit of limit per period
// with burst burst: the limit's rate and burst less the shares'. ok
// false: the central path is denied now, to retry after retry (the
// learning mode's end, or the time a fair part of the limit takes to
// grant cost); a caller then marks it waiting (Denied).
func (r *RateLeases) Central(now, period, limit, burst, cost int64) (rate, b int64, retry int64, ok bool) {
	r.Prune(now)
	if burst <= 0 {
		burst = limit
	}
	if now < r.Learn {
		return 0, 0, r.Learn - now, false
	}
	s, sb := r.Sum(limit, burst)
	rate, b = limit-s, burst-sb
	if s > 0 && (rate <= 0 || b < cost) {
		return 0, 0, int64(float64(period) * float64(len(r.Leases)+1) * float64(max(cost, 1)) / float64(limit)), false
	}
	return rate, b, 0, true
}

// Denied marks the central path waiting until now plus the last
// refresh's lease length: the shares' next refreshes give it its fair
// share.
func (r *RateLeases) Denied(now int64) {
	if len(r.Leases) > 0 {
		r.Waits = now + r.TTL
	}
}

// SettleRate is the rate at which a settle of the central path's tokens
// (governor.RateAdjustment) is charged at now, for a limit of limit: the
// rate its reservations are held to (Central), or the limit's when the
// shares hold it all, so that a token used beyond the estimate costs
// the central path what it costs a reservation.
func (r *RateLeases) SettleRate(now, limit int64) int64 {
	r.Prune(now)
	if s, _ := r.Sum(limit, 0); s < limit {
		return limit - s
	}
	return limit
}
