package view

import (
	"context"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/capacity"
	"github.com/governor-dev/governor/governor/humantime"
)

// RateSource reads rate keys: a *governor.Governor, or serve's
// reopening one.
type RateSource interface {
	Rates(ctx context.Context) ([]string, error)
	RateStatus(ctx context.Context, name string) (governor.RateStatus, error)
}

// RateShares reads the rate keys among names (every one when none is
// named) that have live rate shares or counted local grants
// (docs/capacity.md), by name: a rate-only provider's too.
func RateShares(ctx context.Context, g RateSource, names []string) ([]governor.RateStatus, error) {
	all, err := g.Rates(ctx)
	if err != nil {
		return nil, err
	}
	slices.Sort(all)
	var out []governor.RateStatus
	for _, n := range all {
		if len(names) > 0 && !slices.Contains(names, n) {
			continue
		}
		rs, err := g.RateStatus(ctx, n)
		if err != nil {
			return nil, err
		}
		if len(rs.Shares) > 0 || rs.LocalGrants > 0 || len(rs.TokenShares) > 0 || rs.TokenLocalGrants > 0 {
			out = append(out, rs)
		}
	}
	return out, nil
}

// RateKey is the rate shares of one rate key in the --json of
// `governor slots`: the requests granted locally from them, the end of
// its learning mode (absent when none), and each share; then the
// tokens taken locally from its tokens' shares, and each of those (in
// tokens; absent when none).
type RateKey struct {
	Resource      string      `json:"resource"`
	LocalGrants   int64       `json:"local_grants"`
	LearningUntil *time.Time  `json:"learning_until,omitempty"`
	Shares        []RateShare `json:"shares"`
	LocalTokens   int64       `json:"local_tokens,omitempty"`
	TokenShares   []RateShare `json:"token_shares,omitempty"`
}

// RateShare is one process's rate share: the requests per the limit's
// period it wanted at its last refresh, the rate and burst it holds, and
// the requests it had granted locally from it by then (since it opened).
type RateShare struct {
	LeaseID          string  `json:"lease_id"`
	Wanted           int64   `json:"wanted"`
	Held             int64   `json:"held"`
	Burst            int64   `json:"burst"`
	Used             int64   `json:"used"`
	ExpiresInSeconds float64 `json:"expires_in_seconds"`
}

// WithRates is s with the rate shares of rss (RateShares).
func (s Slots) WithRates(rss []governor.RateStatus) Slots {
	for _, rs := range rss {
		k := RateKey{Resource: rs.Key.Resource, LocalGrants: rs.LocalGrants, Shares: []RateShare{}}
		if rs.Learning.After(rs.Now) {
			at := rs.Learning.UTC()
			k.LearningUntil = &at
		}
		k.Shares = rateShares(k.Shares, rs.Shares, rs.Now)
		k.LocalTokens, k.TokenShares = rs.TokenLocalGrants, rateShares(nil, rs.TokenShares, rs.Now)
		s.RateShares = append(s.RateShares, k)
	}
	return s
}

// rateShares is out with the shares hs, as of now.
func rateShares(out []RateShare, hs []capacity.RateHolder, now time.Time) []RateShare {
	for _, h := range hs {
		out = append(out, RateShare{LeaseID: h.ID, Wanted: h.Want, Held: h.Rate, Burst: h.Burst, Used: h.Granted,
			ExpiresInSeconds: secs(h.Expires.Sub(now))})
	}
	return out
}

// WriteRateShares writes the rate shares of rss (RateShares), a block
// each, blocks apart by a blank line: the requests' shares, then the
// tokens' (when there are any).
func WriteRateShares(w io.Writer, rss []governor.RateStatus) {
	for i, rs := range rss {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s  rate shares %d  local grants %d", Dash(rs.Key.Resource), len(rs.Shares), rs.LocalGrants)
		if len(rs.TokenShares) > 0 || rs.TokenLocalGrants > 0 {
			fmt.Fprintf(w, "  token shares %d  local tokens %d", len(rs.TokenShares), rs.TokenLocalGrants)
		}
		if rs.Learning.After(rs.Now) {
			fmt.Fprintf(w, "  LEARNING for %s after a loss of its state: no share grows", humantime.Ago(rs.Learning.Sub(rs.Now)))
		}
		fmt.Fprintln(w)
		writeRateTable(w, "RATE SHARE", rs.Shares, rs.Now)
		writeRateTable(w, "TOKEN SHARE", rs.TokenShares, rs.Now)
	}
}

// writeRateTable writes the shares hs as a table headed by kind, or
// nothing when there are none.
func writeRateTable(w io.Writer, kind string, hs []capacity.RateHolder, now time.Time) {
	if len(hs) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  %s\tWANTED\tHELD\tBURST\tUSED\tEXPIRES IN\n", kind)
	for _, h := range hs {
		fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t%d\t%s\n", Dash(h.ID), h.Want, h.Rate, h.Burst, h.Granted, humantime.Ago(h.Expires.Sub(now)))
	}
	tw.Flush()
}
