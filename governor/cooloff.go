package governor

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/governor-dev/governor/governor/eventkind"
	"github.com/governor-dev/governor/governor/humantime"
)

// DefaultCoolOff is the cool-off after a rate-limit signal that did not
// say how long to wait; up to a quarter more is added at random, so that
// the fleet's probes after it do not all arrive in the same instant.
const DefaultCoolOff = 5 * time.Second

// CoolOff pauses resource, fleet-wide, for d on the backend's clock (d
// 0: DefaultCoolOff plus up to a quarter more at random); see
// Backend.Admin of eventkind.CoolOff. A provider's resource is ProviderResource(name). It
// returns the end of the cool-off in force, which may be later than
// asked. A d below zero or above MaxRetryAfter is ErrInvalid and
// changes nothing.
func (g *Governor) CoolOff(ctx context.Context, resource string, d time.Duration, reason string) (time.Time, error) {
	if err := ValidateResource(resource); err != nil {
		return time.Time{}, err
	}
	d, err := coolOffFor(d)
	if err != nil {
		return time.Time{}, err
	}
	if reason == "" {
		reason = "rate-limit signal"
	}
	// This process's rate share stops granting now, not at its next
	// refresh (docs/capacity.md, Rate shares).
	defer g.caps.coolRate(resource)()
	res, err := g.b.Admin(ctx, Key{g.project, resource}, Action{Kind: eventkind.CoolOff, For: d, Detail: fmt.Sprintf("%s (session %s)", reason, g.decl.Session)})
	return res.Until, err
}

// coolOffFor checks a cool-off's length: 0 is DefaultCoolOff with
// jitter, and what remains is at least 1ms.
func coolOffFor(d time.Duration) (time.Duration, error) {
	switch {
	case d < 0 || d > MaxRetryAfter:
		return 0, invalid("cool-off %v; allowed: 0 (the default, %v with jitter) to %v", d, DefaultCoolOff, MaxRetryAfter)
	case d == 0:
		return DefaultCoolOff + time.Duration(rand.Int64N(int64(DefaultCoolOff/4))), nil
	}
	return max(d, time.Millisecond), nil
}

// signalled returns the cool-off err asks for when it carries a
// RateLimited.
func signalled(err error) (RateLimited, bool) {
	var rl RateLimited
	if err == nil || !errors.As(err, &rl) {
		return RateLimited{}, false
	}
	return rl, true
}

// CoolingOff says that st's resource is cooling off and until when, or
// "" when it is not.
func (st Status) CoolingOff() string {
	if left := st.coolingOff(); left > 0 {
		return humantime.CoolOffNote(st.CoolOff, left)
	}
	return ""
}

// Quarantined says, for a refusal's message, that st is in a quarantine
// after lost data and for how long more; "" when it is not.
func (st Status) Quarantined() string {
	if !st.Quarantine.After(st.Now) {
		return ""
	}
	return fmt.Sprintf("quarantined for %v more: its data was lost (Redis restarted or evicted keys), and grants wait until every holder of the lost state has renewed and learnt it",
		st.Quarantine.Sub(st.Now).Round(time.Millisecond))
}

// coolingOff tells how long st's cool-off has left (0: none).
func (st Status) coolingOff() time.Duration {
	if st.CoolOff.IsZero() || !st.CoolOff.After(st.Now) {
		return 0
	}
	return st.CoolOff.Sub(st.Now)
}
