package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/governor-dev/governor/config"
	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/safetext"
	"github.com/governor-dev/governor/internal/acquire"
	"github.com/governor-dev/governor/internal/connect"
)

// spendFlags adds run's spend flags (--cost, --model, --max-tokens,
// --input-tokens, --budget) to f, for 'governor acquire'.
func spendFlags(f *pflag.FlagSet, s *acquire.SpendRequest) {
	f.Var(costFlag{&s.Cost}, "cost", "the lease's upper-bound cost, in the budgets' unit (0.50 or 0.50USD): reserved on every spend budget that applies, settled by 'governor settle' or at the estimate by 'governor release' (docs/budgets.md)")
	f.StringVar(&s.Model, "model", "", "the model the lease's work calls: for the budgets' models scope and the price table (prices.PROVIDER/MODEL)")
	f.Int64Var(&s.MaxTokens, "max-tokens", 0, "instead of --cost: price the call from the price table, as --input-tokens of input and this many of output")
	f.Int64Var(&s.InputTokens, "input-tokens", 0, "with --max-tokens: the call's input tokens")
	f.StringArrayVar(&s.Budgets, "budget", nil, "a spend budget to charge besides those whose scope holds the lease (repeatable)")
}

// costFlag is a --cost flag: read by acquire.ParseCost when given, so
// that an empty or unreadable cost is a bad flag (exit 125) before
// anything is held, never a run without a cost.
type costFlag struct{ v *string }

func (f costFlag) String() string {
	if f.v == nil {
		return ""
	}
	return *f.v
}

func (f costFlag) Set(s string) error {
	if _, _, err := acquire.ParseCost(s); err != nil {
		return err
	}
	*f.v = s
	return nil
}

func (f costFlag) Type() string { return "cost" }

// planAcquireSpend plans the spend of 'governor acquire RESOURCE': its
// scope is the provider when RESOURCE is provider:NAME, --model,
// --fair-key and the session. nil when no cost is asked.
func (a *app) planAcquireSpend(c config.Config, r acquire.SpendRequest, resource, fairKey, session string, stderr io.Writer) (*acquire.Spend, error) {
	scope := config.SpendScope{Model: r.Model, FairKey: fairKey, Session: connect.Session(session, a.env)}
	if name, ok := strings.CutPrefix(resource, governor.ProviderResourcePrefix); ok {
		scope.Providers = []string{name}
	}
	if scope.Session == "" {
		host, _ := os.Hostname()
		scope.Session = fmt.Sprintf("%s:%d", host, os.Getpid())
	}
	s, err := acquire.PlanSpend(c, r, scope)
	if s != nil && len(s.Budgets) == 0 {
		fmt.Fprintf(stderr, "governor: no spend budget applies to this lease (see 'governor budgets'): its cost is not reserved\n")
		return nil, nil
	}
	return s, err
}

// releaseHandle is 'governor release' of h: ReleaseHandle, with the
// settle of the reservation 'governor acquire --cost' made under the
// lease (every budget at its estimate, unless settled before) sent with
// the release when the configuration has spend budgets and h proves the
// lease (ReleaseHandleSettle: no round trip of its own on Redis). A
// settle that fails is said on stderr (the estimate stays counted).
func (a *app) releaseHandle(ctx context.Context, g *governor.Governor, h governor.Handle, force bool, stderr io.Writer) error {
	l, err := a.load()
	if err != nil || len(l.Config.Budgets) == 0 || h.Secret == "" {
		return g.ReleaseHandle(ctx, h, force)
	}
	st, serr := g.ReleaseHandleSettle(ctx, h, h.ID, nil)
	if serr != nil {
		fmt.Fprintf(stderr, "governor: settling the lease's cost: %s (its estimate stays counted)\n", safetext.Escape(serr.Error()))
	}
	return st.ReleaseErr
}
