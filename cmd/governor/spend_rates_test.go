package main

import (
	"strings"
	"testing"
)

// TestRunCostRatesOnly: 'governor run --cost' of a provider with rate
// limits only (no slot) reserves the cost with the rate (one round trip
// on Redis, TestRunCostRoundTrips): the command settles its actual, or
// the run the estimate; a budget that refuses fails 73 naming it; a rate
// that refuses fails 73 naming the rate, and leaves nothing reserved.
func TestRunCostRatesOnly(t *testing.T) {
	t.Parallel()
	const config = "providers:\n  limited: {requests_per_minute: 3}\nbudgets:\n  day: {limit: 10, unit: USD, per: 24h}\n"
	runTargets(t, config, func(t *testing.T, tg *target) {
		g := tg.governor(t)
		call := []string{"run", "--provider", "limited"}
		want := func(what string, spent int64) {
			t.Helper()
			if st := budgetState(t, g, "day"); st.Spent != spent || st.Reserved != 0 || st.Open != 0 {
				t.Fatalf("day %s: %+v; want %d spent, nothing reserved", what, st, spent)
			}
		}
		code, out, stderr := tg.run(t, append(call, "--cost", "0.5", "--", "sh", "-c", `echo "$GOVERNOR_SPEND"; `+tg.settleLine("--cost", "0.2"))...)
		if code != 0 || !strings.Contains(out, " day\n") || !strings.Contains(out, "settled ") {
			t.Fatalf("run --cost 0.5 settling 0.2: exit %d, %q, %q", code, out, stderr)
		}
		want("after a settle of 0.2", 200_000)
		code, _, stderr = tg.run(t, append(call, "--cost", "20", "--", "true")...)
		if code != 73 || !strings.Contains(stderr, "budget day exhausted: spent 0.2 USD, reserved 0 USD, limit 10 USD, this call 20 USD") {
			t.Fatalf("run --cost 20 over the budget: exit %d, %q", code, stderr)
		}
		want("after a refusal", 200_000)
		if code, _, stderr = tg.run(t, append(call, "--cost", "0.5", "--", "true")...); code != 0 {
			t.Fatalf("run --cost 0.5: exit %d, %q", code, stderr)
		}
		want("after a run settled at its estimate", 700_000)
		// The minute's three requests are spent.
		code, _, stderr = tg.run(t, append(call, "--cost", "0.5", "--", "true")...)
		if code != 73 || !strings.Contains(stderr, "provider limited: rate limit reached") {
			t.Fatalf("run over the rate: exit %d, %q", code, stderr)
		}
		want("after the rate refused", 700_000)
	})
}
