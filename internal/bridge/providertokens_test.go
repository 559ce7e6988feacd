package bridge_test

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
)

// remainingTokens is what provider anthropic's token budget has left,
// read from the store.
func remainingTokens(t *testing.T, st store) int64 {
	t.Helper()
	g, err := governor.New(st(t), governor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	rs, err := g.RateStatus(context.Background(), governor.ProviderResource("anthropic"))
	if err != nil {
		t.Fatal(err)
	}
	return rs.RemainingTokens
}

// TestProviderReportSettlesTokens: provider_report's used_tokens settles
// the lease's token reservation as Provider.Do does (a refund below the
// estimate, a charge above it), once; a provider with rates only (no
// slot) is found from the lease. Refills only add tokens (100 a second
// here), so each bound below holds however slow the machine is.
func TestProviderReportSettlesTokens(t *testing.T) {
	for name, def := range map[string]string{"rates only": "{tokens_per_minute: 6000}", "with a slot": "{max_concurrency: 2, tokens_per_minute: 6000}"} {
		t.Run(name, func(t *testing.T) { reportSettlesTokens(t, def) })
	}
}

func reportSettlesTokens(t *testing.T, def string) {
	backends(t, func(t *testing.T, st store) {
		inR, inW := io.Pipe()
		a := startWith(t, st, catalogOf(t, "providers:\n  anthropic: "+def+"\n"), inR, inW)
		a.hello()
		l := a.call("provider_acquire", map[string]any{"provider": "anthropic", "tokens": 6000})
		a.call("provider_report", map[string]any{"lease": l["lease"], "outcome": "ok", "used_tokens": 1000})
		if got := remainingTokens(t, st); got < 5000 {
			t.Fatalf("6000 reserved, 1000 used: %d tokens left; want 5000 given back", got)
		}
		// A second report settles nothing more (not 3000 more charged).
		a.call("provider_report", map[string]any{"lease": l["lease"], "outcome": "ok", "used_tokens": 9000})
		if got := remainingTokens(t, st); got < 5000 {
			t.Fatalf("after a second report: %d tokens left; want the first report's 5000 or more", got)
		}
		a.call("provider_release", map[string]any{"lease": l["lease"]})
		// Used above the estimate: the difference is charged.
		l = a.call("provider_acquire", map[string]any{"provider": "anthropic"})
		at := time.Now()
		before := remainingTokens(t, st)
		a.call("provider_report", map[string]any{"lease": l["lease"], "used_tokens": 3000})
		got := remainingTokens(t, st)
		refill := int64(time.Since(at).Seconds()*100) + 2 // since before was read, and a token of rounding on each read
		if got > before-3000+refill {
			t.Fatalf("0 reserved, 3000 used: %d tokens left of %d (refill at most %d); want 3000 charged", got, before, refill)
		}
	})
}

func TestProviderReportTokensBadInput(t *testing.T) {
	inR, inW := io.Pipe()
	st, at := fileStore(t), time.Now()
	a := startWith(t, st, catalogOf(t, "providers:\n  anthropic: {tokens_per_minute: 6000}\n  openai: {max_concurrency: 1}\n"), inR, inW)
	a.hello()
	l := a.call("provider_acquire", map[string]any{"provider": "anthropic", "tokens": 100})
	both := a.call("acquire", map[string]any{"providers": []string{"anthropic", "openai"}, "tokens": 100})
	plain := a.call("acquire", map[string]any{"resources": []string{"r"}, "limit": 1})
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"provider": "anthropic", "used_tokens": 10}, "give the lease"},
		{map[string]any{"lease": l["lease"], "used_tokens": -1}, "used_tokens -1"},
		{map[string]any{"lease": plain["lease"], "provider": "anthropic", "used_tokens": 10}, "reserved no tokens of provider anthropic"},
		{map[string]any{"lease": plain["lease"], "used_tokens": 10}, "needs a provider"},
		{map[string]any{"lease": both["lease"], "used_tokens": 10}, "anthropic, openai"},
		{map[string]any{"lease": l["lease"], "used_tokens": 10, "outcome": "meh"}, `outcome "meh"`},
	} {
		if e := a.fail("provider_report", tc.args); e["kind"] != "failure" || !strings.Contains(e["message"].(string), tc.want) {
			t.Errorf("%v: %v; want a failure naming %q", tc.args, e, tc.want)
		}
	}
	// None of them settled anything (100 and 100 reserved of 6000);
	// the lease's report still settles.
	if got, refill := remainingTokens(t, st), int64(time.Since(at).Seconds()*100)+2; got > 5800+refill {
		t.Fatalf("after refused reports: %d tokens left (refill at most %d); want 5800", got, refill)
	}
	a.call("provider_report", map[string]any{"lease": l["lease"], "used_tokens": 10})
	if got := remainingTokens(t, st); got < 5890 {
		t.Fatalf("after the report: %d tokens left; want 90 given back", got)
	}
}
