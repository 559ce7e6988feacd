package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/exitcode"
	"github.com/governor-dev/governor/internal/view"
)

// The admin actions: cancel, pause, resume, limit. Each names the
// resource, checks that it is known (configured or with state: a typo is
// an error naming the closest names) and records who acted (--by, else
// this user, session, host and pid) in the resource's events.

// adminTarget opens the backend and checks that resource is known.
func (a *app) adminTarget(ctx context.Context, resource string) (*governor.Governor, error) {
	g, err := a.open(ctx, openOptions{})
	if err != nil {
		return nil, err
	}
	if _, err := a.statuses(ctx, g, []string{resource}); err != nil {
		g.Close()
		return nil, err
	}
	return g, nil
}

// adminError is an admin action's error: no such waiter to cancel exits
// 122, the rest as exitcode.For maps them.
func adminError(err error) error {
	if errors.Is(err, governor.ErrNoWaiter) {
		return exitWith(exitcode.LeaseLost, err)
	}
	return err
}

// printAfter prints resource's state after an action: msg, or with
// --json its object in the schema of 'governor slots --json'.
func (a *app) printAfter(ctx context.Context, w io.Writer, g *governor.Governor, resource, msg string) error {
	sts, err := a.statuses(ctx, g, []string{resource})
	if err != nil {
		return err
	}
	if a.json {
		return writeJSON(w, view.SlotsOf(g.Project(), sts, nil).Resources[0])
	}
	fmt.Fprintln(w, msg)
	return nil
}

const byUsage = "a label for who acts, recorded beside your user, session, host and pid (which the event always names)"

func (a *app) cancelCmd() *cobra.Command {
	var sel governor.CancelSelector
	var by string
	cmd := &cobra.Command{
		Use:   "cancel RESOURCE (--waiter ID | --session SESSION)",
		Short: "Withdraw waiters from a resource's queue; their acquire ends saying who cancelled it",
		Example: `  governor cancel heavy --session ci-42
  governor cancel heavy --waiter 9f3c2a1b --by alice`,
		Long: `cancel withdraws the waiter with --waiter ID (the WAITER column of 'governor slots':
the id, or a prefix of at least 8 characters naming one waiter), or every waiter of
--session SESSION, from RESOURCE's queue. Each waiting acquire ends at once with an
error saying who cancelled it ('governor run' exits 73); the room they leave goes
to the queue. The cancel is recorded as a "cancelled" event naming who did it
('governor events RESOURCE'). Holders are never cancelled: see 'governor takeover'.

--json prints {"resource", "cancelled": [{"id", "session", "host", "pid", "weight"}]}.

Exit codes: 0 cancelled; 122 no such waiter is queued (granted meanwhile, gone, or
never queued: nothing changed); 125 bad input (an unknown RESOURCE, both or neither
of --waiter and --session), bad config or backend unreachable; nothing changed.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if (sel.WaiterID == "") == (sel.Session == "") {
				return exitWith(exitcode.Failure, fmt.Errorf("cancel %s: give exactly one of --waiter ID and --session SESSION (got waiter %q, session %q)",
					args[0], sel.WaiterID, sel.Session))
			}
			ctx := cmd.Context()
			g, err := a.adminTarget(ctx, args[0])
			if err != nil {
				return err
			}
			defer g.Close()
			gone, err := g.Cancel(ctx, args[0], sel, by)
			if err != nil {
				return adminError(err)
			}
			w := cmd.OutOrStdout()
			if a.json {
				type cancelled struct {
					ID      string `json:"id"`
					Session string `json:"session"`
					Host    string `json:"host"`
					PID     int    `json:"pid"`
					Weight  int    `json:"weight"`
				}
				out := []cancelled{}
				for _, wt := range gone {
					out = append(out, cancelled{wt.ID, wt.Session, wt.Host, wt.PID, wt.Weight})
				}
				return writeJSON(w, map[string]any{"resource": args[0], "cancelled": out})
			}
			for _, wt := range gone {
				fmt.Fprintf(w, "cancelled waiter %s of %s (session %s, %s on %s, weight %d)\n", dash(wt.ID), dash(args[0]),
					dash(wt.Session), wt.Processes(), dash(wt.Host), wt.Weight)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&sel.WaiterID, "waiter", "", "the waiter to withdraw: its id, or a prefix of at least 8 characters")
	f.StringVar(&sel.Session, "session", "", "withdraw every waiter of this session")
	f.StringVar(&by, "by", "", byUsage)
	return cmd
}

func (a *app) pauseCmd() *cobra.Command {
	return a.pauseResumeCmd(true)
}

func (a *app) resumeCmd() *cobra.Command {
	return a.pauseResumeCmd(false)
}

func (a *app) pauseResumeCmd(pause bool) *cobra.Command {
	var by string
	cmd := &cobra.Command{
		Use:   "pause RESOURCE",
		Short: "Stop a resource granting anything new; holders finish, waiters keep their place",
		Example: `  governor pause heavy --by "disk full"
  governor resume heavy`,
		Long: `pause stops RESOURCE granting anything new, to anyone, until 'governor resume':
holders keep their leases and finish, waiters keep their place in the queue, new
acquires queue (or are refused with --if-busy fail). 'governor slots' shows it
PAUSED, since when and by whom; the pause is recorded as a "paused" event naming
who did it. Pausing a paused resource changes nothing. A paused resource is never
forgotten (see --resources-retention in 'governor serve --help').

--json prints the resource as 'governor slots --json' does.

Exit codes: 0 paused (or paused already); 125 an unknown RESOURCE, bad flags, bad
config or backend unreachable; nothing changed.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			g, err := a.adminTarget(ctx, args[0])
			if err != nil {
				return err
			}
			defer g.Close()
			msg := fmt.Sprintf("paused %s: nothing new is granted until 'governor resume %s'; holders finish, waiters keep their place", args[0], args[0])
			if pause {
				err = g.Pause(ctx, args[0], by)
			} else {
				err = g.Resume(ctx, args[0], by)
				msg = fmt.Sprintf("resumed %s: the queue is served", args[0])
			}
			if err != nil {
				return adminError(err)
			}
			return a.printAfter(ctx, cmd.OutOrStdout(), g, args[0], msg)
		},
	}
	if !pause {
		cmd.Use = "resume RESOURCE"
		cmd.Short = "Undo 'governor pause': the resource's room goes to the head of the queue at once"
		cmd.Long = `resume undoes 'governor pause': the room RESOURCE has goes to the head of its
queue at once, by the same hand-off as a release. It is recorded as a "resumed"
event naming who did it. Resuming a resource that is not paused changes nothing.

--json prints the resource as 'governor slots --json' does.

Exit codes: 0 resumed (or not paused); 125 an unknown RESOURCE, bad flags, bad
config or backend unreachable; nothing changed.`
	}
	cmd.Flags().StringVar(&by, "by", "", byUsage)
	return cmd
}

func (a *app) limitCmd() *cobra.Command {
	var (
		by    string
		clear bool
	)
	cmd := &cobra.Command{
		Use:   "limit RESOURCE (N | --clear)",
		Short: "Set a resource's limit live, or --clear it back to the configured one",
		Example: `  governor limit heavy 4
  governor limit heavy --clear`,
		Long: `limit sets the limit in force of RESOURCE to N slots (1 to ` + strconv.Itoa(governor.MaxLimit) + `) live, without losing
any state: holders keep valid leases; raised, the freed room goes to the head of the
queue at once, by the same hand-off as a release; lowered below the weight in use,
nothing is granted until the use falls under N. --clear returns to the configured
limit. Each change is recorded as a "limit" event naming who did it.

Precedence: a live limit wins over the limit processes ask for (exec-defaults.yaml
limits, 'governor run --limit', the library's AcquireOptions.Limit) until it is
cleared; a process asking for another limit meanwhile is shown as DRIFT in
'governor slots'. Without a live limit, the limit in force is the one processes ask
for, and it changes only while the resource is idle. Cleared, the configured limit
(exec-defaults.yaml) is in force at once: the next release hands off under it; for
a resource the configuration does not name, the limit in force goes back to the one
a process asked for meanwhile, or stays until a process asks for another while the
resource is idle. 'governor slots' and 'governor config
show' show where the limit in force came from (live: by whom and when). A resource
with a live limit is never forgotten.

--json prints the resource as 'governor slots --json' does.

Exit codes: 0 set (or cleared); 125 bad input (N not a whole number from 1 to ` + strconv.Itoa(governor.MaxLimit) + `,
both or neither of N and --clear, an unknown RESOURCE), bad config or backend
unreachable; nothing changed.`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			limit := 0
			switch {
			case len(args) == 2 && clear:
				return exitWith(exitcode.Failure, fmt.Errorf("limit %s: both N (%q) and --clear; give one", args[0], args[1]))
			case len(args) == 1 && !clear:
				return exitWith(exitcode.Failure, fmt.Errorf("limit %s: give N (1 to %d) or --clear", args[0], governor.MaxLimit))
			case len(args) == 2:
				n, err := strconv.Atoi(args[1])
				if err != nil || n < 1 || n > governor.MaxLimit {
					return exitWith(exitcode.Failure, fmt.Errorf("limit %q for %s; allowed: a whole number from 1 to %d, or --clear",
						args[1], args[0], governor.MaxLimit))
				}
				limit = n
			}
			ctx := cmd.Context()
			g, err := a.adminTarget(ctx, args[0])
			if err != nil {
				return err
			}
			defer g.Close()
			set := func() error { return g.SetLimit(ctx, args[0], limit, by) }
			if clear {
				l, err := a.load()
				if err != nil {
					return err
				}
				set = func() error { return g.ClearLimit(ctx, args[0], l.Config.Limits()[args[0]], by) }
			}
			if err := set(); err != nil {
				return adminError(err)
			}
			st, err := g.Status(ctx, args[0])
			if err != nil {
				return exitWith(exitcode.Failure, err)
			}
			msg := fmt.Sprintf("limit of %s set live to %d; in use %d", args[0], st.Limit, st.Used)
			if limit == 0 {
				msg = fmt.Sprintf("live limit of %s cleared; the limit in force is %d; in use %d", args[0], st.Limit, st.Used)
			}
			if st.Used > st.Limit {
				msg += fmt.Sprintf(": above the limit, nothing is granted until the use falls under %d", st.Limit)
			}
			return a.printAfter(ctx, cmd.OutOrStdout(), g, args[0], msg)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&clear, "clear", false, "clear the live limit: back to the configured one")
	f.StringVar(&by, "by", "", byUsage)
	return cmd
}
