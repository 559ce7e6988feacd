package main

import (
	"bufio"
	"strings"
	"testing"

	"github.com/governor-dev/governor/internal/exitcode"
	"github.com/governor-dev/governor/internal/redistest"
)

// ownerBudget is the fleet's 1 USD budget of the settle owner tests.
const ownerBudget = `providers:
  anthropic: {max_concurrency: 4}
budgets:
  day: {limit: 1, unit: USD, per: 24h, providers: [anthropic]}
`

// TestSecondUserCannotSettleARun (issue 43): a second Unix user who knows
// a run's reservation id (public: the watchdog's argv in ps) or an
// acquired lease's id (shown by slots) can settle neither: not at 0 (to
// spend the 0.9 itself: 1.8 on a 1 USD budget before), not at 1000 (the
// budget exhausted for everyone), not with GOVERNOR_LEASE=RESOURCE@ID.
// The owner's own settle goes through.
func TestSecondUserCannotSettleARun(t *testing.T) {
	s := redistest.Start(t)
	in := newIntruderWith(t, s.URL(), ownerBudget)
	tg := &target{bin: governorBin(t), name: "redis", redisURL: s.URL(), config: writeRunConfig(t, ownerBudget)}
	g := tg.governor(t)

	holder := tg.command("run", "--provider", "anthropic", "--cost", "0.9", "--", "sh", "-c",
		`echo "$GOVERNOR_SPEND"; cat >/dev/null; `+tg.settleLine("--cost", "0.3"))
	stdin, err := holder.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var holderErr strings.Builder
	holder.Stderr = &holderErr
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		_ = holder.Wait()
	}()
	out := bufio.NewReader(stdout)
	line, err := out.ReadString('\n')
	if err != nil {
		t.Fatalf("the run's command printed nothing: %v; stderr %s", err, holderErr.String())
	}
	key, _, _ := strings.Cut(strings.TrimSpace(line), " ")
	id, secret, ok := strings.Cut(key, ".")
	if !ok || secret == "" {
		t.Fatalf("GOVERNOR_SPEND %q; want RESERVATION.SECRET BUDGET...", line)
	}
	// A lease of 'governor acquire --cost', its reservation named after it.
	code, acq, errs := tg.run(t, "acquire", "provider:anthropic", "--ttl", "10m", "--cost", "0.1")
	if code != 0 {
		t.Fatalf("acquire --cost: exit %d, %s", code, errs)
	}
	handle, _, _ := strings.Cut(strings.TrimSpace(acq), " ")
	public, _, _ := strings.Cut(handle, ".")
	wantDay := func(what string) {
		t.Helper()
		if st := budgetState(t, g, "day"); st.Spent != 0 || st.Reserved != 1_000_000 {
			t.Fatalf("%s: day spent %d reserved %d; want 0 and 1 (0.9 + 0.1)", what, st.Spent, st.Reserved)
		}
	}
	wantDay("before")
	for _, tt := range []struct {
		env  []string
		args []string
		want string
	}{
		{nil, []string{"--lease", id, "--cost", "0"}, "has no secret"},
		{nil, []string{"--lease", id + "." + strings.Repeat("0", 32), "--cost", "0"}, "the secret given does not prove it"},
		{nil, []string{"--lease", id + ".x", "--cost", "1000"}, "the secret given does not prove it"},
		{[]string{"GOVERNOR_SPEND=" + id + " day"}, []string{"--cost", "0"}, "has no secret"},
		{[]string{"GOVERNOR_LEASE=" + public}, []string{"--cost", "0"}, "without its secret"},
		{[]string{"GOVERNOR_LEASE=" + public + "." + strings.Repeat("1", 32)}, []string{"--cost", "0"}, "the secret does not belong to the lease id"},
	} {
		if code, _, errs := in.run(t, tt.env, append([]string{"settle"}, tt.args...)...); code != exitcode.Failure || !strings.Contains(errs, tt.want) {
			t.Errorf("settle %v %v as %s: exit %d, %s; want %d, %q", tt.env, tt.args, in.user.Name, code, errs, exitcode.Failure, tt.want)
		}
		wantDay("after the second user's settle")
	}
	// The intruder's own run finds no room: the run's 0.9 still counts.
	if code, _, errs := in.run(t, nil, "run", "--provider", "anthropic", "--cost", "0.9", "--", "true"); code != exitcode.Busy || !strings.Contains(errs, "budget day exhausted") {
		t.Fatalf("the second user's run of 0.9: exit %d, %s; want %d, exhausted", code, errs, exitcode.Busy)
	}
	// The owners settle: the run's command (0.3), the lease by its handle.
	stdin.Close()
	if err := holder.Wait(); err != nil {
		t.Fatalf("the run: %v; stderr %s", err, holderErr.String())
	}
	c := tg.command("settle", "--cost", "0.05")
	c.Env = append(c.Env, "GOVERNOR_LEASE="+handle)
	if code, _, errs := execCode(t, c); code != 0 {
		t.Fatalf("the lease owner's settle: exit %d, %s", code, errs)
	}
	if st := budgetState(t, g, "day"); st.Spent != 350_000 || st.Reserved != 0 {
		t.Fatalf("after the owners' settles: day spent %d reserved %d; want 0.35 and 0", st.Spent, st.Reserved)
	}
}
