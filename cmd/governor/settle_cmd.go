package main

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/governor-dev/governor/config"
	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/acquire"
	"github.com/governor-dev/governor/internal/exitcode"
)

// settleCmd settles a spend reservation at its actual cost.
func (a *app) settleCmd() *cobra.Command {
	var (
		cost, lease string
		budgets     []string
	)
	cmd := &cobra.Command{
		Use:   "settle --cost N [--lease ID.SECRET [--budget NAME...]]",
		Short: "Settle a spend reservation at its actual cost (from inside 'governor run --cost')",
		Long: `settle closes a spend reservation (docs/budgets.md) at the actual cost N, in the
budgets' unit (0.42, or 0.42USD to have the unit checked): the estimate leaves
reserved and N joins spent on each of its budgets; an N above the estimate is
counted in full and recorded as an overrun.

A reservation's id is public (a run's id, a lease's); what proves it is its
secret, and settle needs both, as release and renew need a lease's secret.
Inside 'governor run --cost' (or --max-tokens) the reservation is the run's:
$GOVERNOR_SPEND names and proves it and names its budgets, so the command
reports what it spent with 'governor settle --cost N' before it exits; the run
then settles nothing more. For a lease of 'governor acquire --cost', the
reservation is named after the lease and proven by its secret: with its handle
(RESOURCE@LEASE_ID.SECRET) in $GOVERNOR_LEASE, 'governor settle --cost N'
settles every budget it charged. A reservation made elsewhere is given with
--lease ID.SECRET (a Go reservation's SpendKey), and its budgets with --budget
NAME (a budget not named is then settled at its estimate; without --budget,
every budget is settled at N). A secret that does not prove the reservation
is refused (exit 125), changing nothing.

Settling is idempotent: a reservation settled before, or counted at its
estimate after its TTL, is left as it is, and settle says so (exit 0). --json
prints {"lease", "budgets", "cost", "settled", "overruns"}, cost in micro-units
(budgets empty: every budget of the reservation).

Exit codes: 0 settled, or nothing left to settle; 125 a bad --cost, budget or
lease, no reservation named, bad config or backend unreachable; nothing changed.`,
		Example: `  governor run --provider anthropic --cost 0.50 -- sh -c './call.sh > out.json && governor settle --cost "$(jq .cost out.json)"'`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			fail := func(err error) error { return exitWith(exitcode.Failure, err) }
			if !cmd.Flags().Changed("cost") {
				return fail(errors.New("--cost missing; allowed: the actual cost in the budgets' unit, 0 or more: 0.42 or 0.42USD"))
			}
			amount, unit, err := acquire.ParseCost(cost) // read by costFlag already
			if err != nil {
				return fail(err)
			}
			names := budgets
			var secret string
			switch {
			case lease == "" && len(budgets) > 0:
				return fail(errors.New("--budget without --lease; allowed: --lease ID.SECRET with each budget it reserved, or neither inside 'governor run --cost'"))
			case lease != "" && len(budgets) == 0:
				names = []string{""} // every budget of the reservation
			case lease == "":
				var ok bool
				if lease, names, ok = acquire.SpendFromEnv(a.env); ok {
					break
				}
				names = []string{""}
				// A lease of 'governor acquire --cost': its reservation
				// is named after the lease.
				arg, err := a.leaseArg(nil)
				if err != nil {
					return fail(fmt.Errorf("no reservation to settle: neither $%s (inside 'governor run --cost') nor $%s (a lease of 'governor acquire --cost') is set; elsewhere give --lease ID.SECRET", acquire.EnvSpend, envLease))
				}
				h, err := parseHandle(arg)
				if err != nil {
					return err
				}
				if h.Secret == "" {
					return fail(fmt.Errorf("$%s names lease %s without its secret; allowed: its handle %s", envLease, h.ID, governor.HandleForm))
				}
				lease = h.ID + "." + h.Secret
			}
			lease, secret, err = governor.ParseSpendKey(lease)
			if err != nil {
				return fail(err)
			}
			l, err := a.load()
			if err != nil {
				return err
			}
			if err := checkUnit(l.Config, names, unit); err != nil {
				return fail(err)
			}
			actual := make([]governor.BudgetAmount, len(names))
			for i, n := range names {
				actual[i] = governor.BudgetAmount{Name: n, Amount: amount}
			}
			ctx := cmd.Context()
			g, err := a.open(ctx, openOptions{})
			if err != nil {
				return err
			}
			defer g.Close()
			st, err := g.SettleBudgets(ctx, lease, secret, actual)
			if err != nil {
				if errors.Is(err, governor.ErrInvalid) || errors.Is(err, governor.ErrNotOwner) {
					return fail(err)
				}
				return err
			}
			if a.json {
				shown := names
				if names[0] == "" {
					shown = []string{} // every budget it reserved
				}
				return writeJSON(cmd.OutOrStdout(), map[string]any{"lease": lease, "budgets": shown, "cost": amount,
					"settled": st.Settled, "overruns": append([]string{}, st.Overruns...)})
			}
			w := cmd.OutOrStdout()
			if !st.Settled {
				_, err := fmt.Fprintf(w, "%s: nothing to settle: settled before, or counted at its estimate after its TTL\n", lease)
				return err
			}
			shown := config.Amount(amount).String()
			if b, ok := l.Config.Budgets[names[0]]; ok {
				shown += " " + b.Unit
			} else if unit != "" {
				shown += " " + unit
			}
			on := strings.Join(names, ", ")
			if names[0] == "" {
				on = "every budget it reserved"
			}
			fmt.Fprintf(w, "settled %s: %s on %s\n", lease, shown, on)
			for _, o := range st.Overruns {
				fmt.Fprintf(w, "overrun on %s: the actual is above the estimate; counted in full\n", o)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.Var(costFlag{&cost}, "cost", "the actual cost, in the budgets' unit (0.42 or 0.42USD)")
	f.StringVar(&lease, "lease", "", "the reservation and its secret, ID.SECRET (default: the run's, from $"+acquire.EnvSpend+", else that of the lease in $"+envLease+")")
	f.StringArrayVar(&budgets, "budget", nil, "with --lease: a budget the reservation charged (repeatable; default: every budget it charged)")
	return cmd
}

// checkUnit refuses a cost written in a unit other than that of the
// budgets it settles: those of names, or, when names is [""] (every
// budget of the reservation, not known here), every configured budget. A
// budget that is not configured (one the library gave inline) has no
// unit known here: a unit written for it is refused too, as it cannot be
// checked.
func checkUnit(c config.Config, names []string, unit string) error {
	if unit == "" {
		return nil
	}
	check, which := names, ""
	if names[0] == "" {
		check, which = slices.Sorted(maps.Keys(c.Budgets)), " (the reservation's budgets are not named: every configured budget must be in it)"
		if len(check) == 0 {
			return fmt.Errorf("%w: cost in %s; no budget is configured, so its unit cannot be checked; allowed: the cost without a unit", governor.ErrInvalid, unit)
		}
	}
	for _, n := range check {
		b, ok := c.Budgets[n]
		switch {
		case !ok:
			return fmt.Errorf("%w: cost in %s; budget %s is not configured: its unit cannot be checked; allowed: the cost without a unit", governor.ErrInvalid, unit, n)
		case b.Unit != unit:
			return fmt.Errorf("%w: cost in %s; budget %s is in %s%s", governor.ErrInvalid, unit, n, b.Unit, which)
		}
	}
	return nil
}
