package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/governor-dev/governor/config"
	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/exitcode"
	"github.com/governor-dev/governor/internal/view"
)

// budgetsCmd lists the project's spend budgets.
func (a *app) budgetsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "budgets [NAME...]",
		Short: "List the project's spend budgets: spent, reserved, limit, reset",
		Example: `  governor budgets
  governor budgets daily --json`,
		Long: `budgets lists the project's spend budgets (see docs/budgets.md) with state: what
is spent and reserved in the window in force, the limit in force (and who set it,
if an operator did), when the window resets, open reservations, overruns, and
whether the budget is paused or held after evidence of lost data. Amounts are in
units (micro-units / 1,000,000). --json prints the same as a list of objects with
amounts in micro-units.

Exit codes: 0 printed; 125 bad flags, bad config or backend unreachable.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			l, err := a.load()
			if err != nil {
				return err
			}
			g, err := a.open(ctx, openOptions{})
			if err != nil {
				return err
			}
			defer g.Close()
			var names []string
			if len(args) > 0 {
				names = args
			}
			sts, now, err := g.Budgets(ctx, names)
			if err != nil {
				return err
			}
			return a.writeBudgets(cmd.OutOrStdout(), view.BudgetsWith(sts, now, budgetConfigs(l.Config, names)))
		},
	}
}

// budgetConfigs is what the configuration says of its budgets (those of
// names; all when names is nil), for the budgets view.
func budgetConfigs(c config.Config, names []string) map[string]view.BudgetConfig {
	out := map[string]view.BudgetConfig{}
	for name, b := range c.Budgets {
		if names != nil && !slices.Contains(names, name) {
			continue
		}
		if sb, err := c.SpendBudget(name); err == nil { // Load refused any other
			out[name] = view.BudgetConfig{Limit: sb.Limit, Soft: sb.Soft, Unit: b.Unit, Window: sb.Window}
		}
	}
	return out
}

// writeBudgets prints v as a table, or as JSON with --json.
func (a *app) writeBudgets(w io.Writer, v view.Budgets) error {
	if a.json {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	return writeBudgetsTable(w, v)
}

// units shows micro-units as units with up to six decimals.
func units(n int64) string {
	s := strconv.FormatFloat(float64(n)/governor.MicroUnit, 'f', 6, 64)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s
}

func writeBudgetsTable(w io.Writer, v view.Budgets) error {
	if len(v.Budgets) == 0 {
		_, err := fmt.Fprintln(w, "no budgets configured or with state in this project")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BUDGET\tSPENT\tRESERVED\tLIMIT\tUSED\tBURN/H\tEXHAUSTS IN\tRESETS IN\tOPEN\tOVERRUNS\tSTATE")
	for _, s := range v.Budgets {
		u := func(n int64) string {
			if s.Unit == "" {
				return units(n)
			}
			return units(n) + " " + s.Unit
		}
		used := "-"
		if s.Limit > 0 {
			used = fmt.Sprintf("%.1f%%", 100*float64(s.Spent+s.Reserved)/float64(s.Limit))
		}
		state := "ok"
		switch {
		case s.Held != "":
			state = "HELD (lost data; 'governor budget " + s.Name + " --confirm')"
		case s.Paused != "":
			state = "PAUSED by " + s.Paused
		case s.Limit > 0 && s.Spent+s.Reserved >= s.Limit:
			state = "EXHAUSTED"
		case !s.Configured:
			state = "ok (not configured)"
		}
		limit := u(s.Limit)
		if s.LimitBy != "" {
			limit += " (live)"
		}
		exhausts := "-"
		if s.Exhausts != nil {
			exhausts = max(s.Exhausts.Sub(v.Now), 0).Round(time.Second).String()
		}
		resets := "-"
		if !s.Reset.IsZero() {
			resets = max(s.Reset.Sub(v.Now), 0).Round(time.Second).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\n", s.Name, u(s.Spent), u(s.Reserved), limit, used,
			u(s.BurnRate), exhausts, resets, s.Open, s.Overruns, state)
	}
	return tw.Flush()
}

// budgetCmd applies an operator's action to one budget.
func (a *app) budgetCmd() *cobra.Command {
	var (
		by, limit                              string
		reset, pause, resume, confirmed, apply bool
	)
	cmd := &cobra.Command{
		Use:   "budget NAME (--limit AMOUNT | --reset | --pause | --resume | --confirm | --apply)",
		Short: "Set a spend budget's limit live, reset, pause, resume, confirm or apply it",
		Example: `  governor budget daily --limit 25.00
  governor budget daily --pause
  governor budget daily --apply   # after editing daily's per, calendar, unit or limit`,
		Long: `budget acts on spend budget NAME (see docs/budgets.md), each action recorded as a
budget event with who did it (--by adds a label):

  --limit AMOUNT  the limit in force from now on, in units (e.g. 40 or 12.50);
                  0 returns to the budget's own (set by its first use, or
                  the last --apply)
  --reset         spent back to 0 in the window in force (open reservations stay)
  --pause         refuse every reservation until --resume
  --resume        end a pause
  --confirm       lift the hold set after evidence of lost data
  --apply         make this configuration's budget NAME the one in force: its
                  unit and window (the definition kept with the budget's
                  state) and its limit, replacing a --limit. The window in
                  force runs to its end with its spent; the next follows
                  the configuration. A caller whose configuration says
                  another unit or window than the state's is refused (125,
                  naming both), one that says another limit is held to the
                  state's: this is the only way a configuration changes a
                  budget in use

Exit codes: 0 done; 125 an unknown budget, bad flags, bad config or backend
unreachable; nothing changed.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var ops []governor.BudgetOp
			var value int64
			if limit != "" {
				v, err := parseUnits(limit)
				if err != nil {
					return exitWith(exitcode.Failure, err)
				}
				ops, value = append(ops, governor.BudgetSetLimit), v
			}
			for _, f := range []struct {
				set bool
				op  governor.BudgetOp
			}{{reset, governor.BudgetReset}, {pause, governor.BudgetPause}, {resume, governor.BudgetResume}, {confirmed, governor.BudgetConfirm}} {
				if f.set {
					ops = append(ops, f.op)
				}
			}
			if apply {
				ops = append(ops, "") // the configuration's, read below
			}
			if len(ops) != 1 {
				return exitWith(exitcode.Failure, fmt.Errorf("budget %s: %d actions given; allowed: exactly one of --limit, --reset, --pause, --resume, --confirm, --apply", args[0], len(ops)))
			}
			ctx := cmd.Context()
			l, err := a.load()
			if err != nil {
				return err
			}
			if apply {
				b, err := l.Config.SpendBudget(args[0])
				if err != nil {
					return exitWith(exitcode.Failure, err)
				}
				ops[0], value = governor.BudgetDefine(b.Definition()), b.Limit
			}
			g, err := a.open(ctx, openOptions{})
			if err != nil {
				return err
			}
			defer g.Close()
			if _, ok := l.Config.Budgets[args[0]]; !ok {
				// Neither configured nor with state: a typo, not a
				// budget to make.
				sts, _, err := g.Budgets(ctx, []string{args[0]})
				if err != nil {
					return exitWith(exitcode.Failure, err)
				}
				if len(sts) == 0 {
					return exitWith(exitcode.Failure, fmt.Errorf("%w: %q is neither configured nor with state; configured: [%s]",
						governor.ErrNoBudget, args[0], strings.Join(slices.Sorted(maps.Keys(l.Config.Budgets)), ", ")))
				}
			}
			if err := g.BudgetAdmin(ctx, args[0], ops[0], value, by); err != nil {
				return exitWith(exitcode.Failure, err)
			}
			sts, now, err := g.Budgets(ctx, []string{args[0]})
			if err != nil {
				return err
			}
			return a.writeBudgets(cmd.OutOrStdout(), view.BudgetsWith(sts, now, budgetConfigs(l.Config, []string{args[0]})))
		},
	}
	f := cmd.Flags()
	f.StringVar(&limit, "limit", "", "the limit in force, in units (0: back to the configured one)")
	f.BoolVar(&reset, "reset", false, "spent back to 0 in the window in force")
	f.BoolVar(&pause, "pause", false, "refuse every reservation until --resume")
	f.BoolVar(&resume, "resume", false, "end a pause")
	f.BoolVar(&confirmed, "confirm", false, "lift the hold set after evidence of lost data")
	f.BoolVar(&apply, "apply", false, "make the configuration's unit, window and limit the budget's (the window in force runs to its end)")
	f.StringVar(&by, "by", "", "a label for who acts, recorded beside your identity")
	return cmd
}

// parseUnits reads an amount in units ("40", "12.50") as micro-units
// (governor.ParseBudgetAmount: exact, at most six decimals).
func parseUnits(s string) (int64, error) { return governor.ParseBudgetAmount(s) }
