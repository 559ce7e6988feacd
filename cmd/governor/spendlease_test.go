package main

import (
	"strings"
	"testing"
	"time"
)

// TestSpendLivesAsItsLease: the reservation of 'governor run --cost' is
// named after the run's lease ($GOVERNOR_SPEND's id is the lease's in
// $GOVERNOR_HELD), and that of 'governor acquire --cost' is counted at
// its estimate once its lease expires unrenewed (its holder died), not
// an hour later. docs/budgets.md, "A caller that dies".
func TestSpendLivesAsItsLease(t *testing.T) {
	t.Parallel()
	runTargets(t, spendConfig, func(t *testing.T, tg *target) {
		g := tg.governor(t)
		code, out, stderr := tg.run(t, "run", "--provider", "anthropic", "--fair-key", "evals", "--cost", "0.1", "--",
			"sh", "-c", `echo "$GOVERNOR_SPEND"; echo "$GOVERNOR_HELD"`)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if code != 0 || len(lines) != 2 {
			t.Fatalf("run --cost 0.1: exit %d, %q, %q", code, out, stderr)
		}
		spend, _, _ := strings.Cut(lines[0], ".")
		if !strings.Contains(lines[1], "="+spend) {
			t.Fatalf("the run's reservation %q is not named after its lease (GOVERNOR_HELD %q)", spend, lines[1])
		}
		code, out, stderr = tg.run(t, "acquire", "provider:anthropic", "--ttl", "1s", "--cost", "0.5")
		if code != 0 || len(strings.Fields(out)) != 2 {
			t.Fatalf("acquire --ttl 1s --cost 0.5: exit %d, %q, %q", code, out, stderr)
		}
		// Nobody renews the lease: within its TTL (and a generous margin
		// for a loaded machine) its estimate counts as spent.
		deadline := time.Now().Add(30 * time.Second)
		for {
			st := budgetState(t, g, "fleet-hour")
			if st.Spent == 600_000 && st.Reserved == 0 && st.Open == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("fleet-hour 30s after a lease of 1s expired with 0.5 reserved: %+v; want 0.6 spent, nothing reserved", st)
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
}
