package metrics_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/capacity"
	"github.com/governor-dev/governor/metrics"
)

// A resource's capacity leases are summed: leases, and the slots they
// want, hold and have in use; a resource without any has no such
// series. The slots granted locally from its shares are a counter, sent
// while it has leases or once it had grants.
func TestMetricsCapacityShares(t *testing.T) {
	src := &fakeSource{project: "prj", statuses: map[string]governor.Status{
		"provider:hot": {Key: governor.Key{Project: "prj", Resource: "provider:hot"}, Limit: 8, Used: 5, Now: t0,
			Holders:  []governor.Holder{{LeaseID: "a", Weight: 5, AcquiredAt: t0}},
			Shares:   []capacity.Lease{{ID: "a", Want: 6, InUse: 4, Held: 5}, {ID: "b", Want: 3}},
			Counters: governor.Counters{Acquired: 2, LocalGrants: 1234}},
		"provider:new": {Key: governor.Key{Project: "prj", Resource: "provider:new"}, Limit: 2, Now: t0,
			Shares: []capacity.Lease{{ID: "c", Want: 1}}},
		"provider:was": {Key: governor.Key{Project: "prj", Resource: "provider:was"}, Limit: 2, Now: t0,
			Counters: governor.Counters{Acquired: 1, Released: 1, LocalGrants: 7}},
		"gpu": {Key: governor.Key{Project: "prj", Resource: "gpu"}, Limit: 2, Now: t0},
	}}
	const want = `
# HELP governor_capacity_leases Live capacity leases of the resource (processes granting locally from a share); absent when none.
# TYPE governor_capacity_leases gauge
governor_capacity_leases{project="prj",resource="provider:hot"} 2
governor_capacity_leases{project="prj",resource="provider:new"} 1
# HELP governor_capacity_local_grants_total Slots granted locally from the resource's capacity shares, with no acquire of the backend's (not in governor_acquires_total), as each process's refreshes report them; absent when none were and no capacity lease is live.
# TYPE governor_capacity_local_grants_total counter
governor_capacity_local_grants_total{project="prj",resource="provider:hot"} 1234
governor_capacity_local_grants_total{project="prj",resource="provider:new"} 0
governor_capacity_local_grants_total{project="prj",resource="provider:was"} 7
# HELP governor_capacity_slots Slots of the resource's capacity leases, summed: wanted (in use plus queued) and in_use as their processes reported at their last refresh, held as the backend counts them (the shares, and calls above a share that shrank); absent when none.
# TYPE governor_capacity_slots gauge
governor_capacity_slots{of="held",project="prj",resource="provider:hot"} 5
governor_capacity_slots{of="in_use",project="prj",resource="provider:hot"} 4
governor_capacity_slots{of="wanted",project="prj",resource="provider:hot"} 9
governor_capacity_slots{of="held",project="prj",resource="provider:new"} 0
governor_capacity_slots{of="in_use",project="prj",resource="provider:new"} 0
governor_capacity_slots{of="wanted",project="prj",resource="provider:new"} 1
`
	c := newCollector(t, src, metrics.CollectorOptions{})
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "governor_capacity_leases", "governor_capacity_slots",
		"governor_capacity_local_grants_total"); err != nil {
		t.Fatal(err)
	}
}

// A provider's rate shares are summed: shares, and the requests they
// want and hold; the requests granted locally from them are a counter,
// sent while it has shares or once it had grants; a rate key without
// either has no such series.
func TestMetricsRateShares(t *testing.T) {
	rpm := governor.RateLimit{Rate: 600, Period: 60e9}
	src := &fakeSource{project: "prj", statuses: map[string]governor.Status{}, rates: map[string]governor.RateStatus{
		"provider:hot": {Key: governor.Key{Project: "prj", Resource: "provider:hot"}, Requests: rpm, Allowed: 3, LocalGrants: 4321, Now: t0,
			Shares: []capacity.RateHolder{{ID: "a", Want: 600, Rate: 300, Burst: 300, Granted: 4000}, {ID: "b", Want: 100, Rate: 100}}},
		"provider:new": {Key: governor.Key{Project: "prj", Resource: "provider:new"}, Now: t0,
			Shares: []capacity.RateHolder{{ID: "c", Want: 60}}},
		"provider:was": {Key: governor.Key{Project: "prj", Resource: "provider:was"}, LocalGrants: 7, Now: t0},
		"provider:old": {Key: governor.Key{Project: "prj", Resource: "provider:old"}, Requests: rpm, Allowed: 9, Now: t0},
	}}
	const want = `
# HELP governor_rate_local_grants_total Requests granted locally from the provider's rate shares, with no reservation of the backend's (not in governor_rate_allowed_total), as each process's refreshes report them; absent when none were and no rate share is live.
# TYPE governor_rate_local_grants_total counter
governor_rate_local_grants_total{project="prj",provider="hot"} 4321
governor_rate_local_grants_total{project="prj",provider="new"} 0
governor_rate_local_grants_total{project="prj",provider="was"} 7
# HELP governor_rate_share_requests Requests per the limit's period of the provider's rate shares, summed: wanted as their processes reported at their last refresh, held as the backend granted them; absent when none.
# TYPE governor_rate_share_requests gauge
governor_rate_share_requests{of="held",project="prj",provider="hot"} 400
governor_rate_share_requests{of="wanted",project="prj",provider="hot"} 700
governor_rate_share_requests{of="held",project="prj",provider="new"} 0
governor_rate_share_requests{of="wanted",project="prj",provider="new"} 60
# HELP governor_rate_shares Live rate shares of the provider's requests limit (processes granting requests locally from a share); absent when none.
# TYPE governor_rate_shares gauge
governor_rate_shares{project="prj",provider="hot"} 2
governor_rate_shares{project="prj",provider="new"} 1
`
	c := newCollector(t, src, metrics.CollectorOptions{})
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "governor_rate_shares", "governor_rate_share_requests",
		"governor_rate_local_grants_total"); err != nil {
		t.Fatal(err)
	}
}

// TestMetricsTokenShares: a provider's tokens' shares have series of
// their own, beside its requests' (which are absent when it has none).
func TestMetricsTokenShares(t *testing.T) {
	src := &fakeSource{project: "prj", statuses: map[string]governor.Status{}, rates: map[string]governor.RateStatus{
		"provider:hot": {Key: governor.Key{Project: "prj", Resource: "provider:hot"}, TokenLocalGrants: 90000, Now: t0,
			TokenShares: []capacity.RateHolder{{ID: "a", Want: 60000, Rate: 30000, Burst: 30000, Granted: 90000}, {ID: "b", Want: 1000, Rate: 1000}}},
	}}
	const want = `
# HELP governor_rate_local_tokens_total Tokens taken locally from the provider's tokens' shares (estimates, and settles above them), as each process's refreshes report them; absent when none were and no tokens' share is live.
# TYPE governor_rate_local_tokens_total counter
governor_rate_local_tokens_total{project="prj",provider="hot"} 90000
# HELP governor_rate_share_tokens Tokens per the limit's period of the provider's tokens' shares, summed: wanted as their processes reported at their last refresh, held as the backend granted them; absent when none.
# TYPE governor_rate_share_tokens gauge
governor_rate_share_tokens{of="held",project="prj",provider="hot"} 31000
governor_rate_share_tokens{of="wanted",project="prj",provider="hot"} 61000
# HELP governor_rate_token_shares Live rate shares of the provider's tokens limit (processes taking tokens locally from a share); absent when none.
# TYPE governor_rate_token_shares gauge
governor_rate_token_shares{project="prj",provider="hot"} 2
`
	c := newCollector(t, src, metrics.CollectorOptions{})
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "governor_rate_token_shares", "governor_rate_share_tokens",
		"governor_rate_local_tokens_total", "governor_rate_shares", "governor_rate_local_grants_total"); err != nil {
		t.Fatal(err)
	}
}
