package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/exitcode"
	"github.com/governor-dev/governor/internal/runner"
	"github.com/governor-dev/governor/internal/view"
)

func (a *app) slotsCmd() *cobra.Command {
	var watch bool
	cmd := &cobra.Command{
		Use:   "slots [RESOURCE...]",
		Short: "Show each resource's limit, use, holders and waiters, without acquiring anything",
		Example: `  governor slots
  governor slots heavy --watch
  governor slots --json`,
		Long: `slots lists, for each resource (all resources with state or configuration when none
are named): its limit, the weight in use, what is free, every holder (session,
host and pid, weight, age, last heartbeat, last progress mark, time to expiry,
fencing token, command with secrets redacted) and every waiter in queue order.
PROGRESS is the last progress mark ('governor touch', 'governor renew'; the
grant when none came yet) and, after '/', the lease's --progress-timeout; "-" for
a lease with neither. A heartbeat says governor is alive; a progress mark says
the work is: see 'governor run --help', --progress-timeout.

Exec runs: "run" is the project's run lock and "run:join" its join slots (see
'governor run --help'); 'governor slots --project P' shows them, with the
provider:* slots, for project P.

A provider's rate-limit signals ('governor backoff', 'governor run
--backoff-exit-code', the library's Provider.Do) show as a cool-off in force and
its end, the time of the last signal, and for an adaptive provider
(providers.NAME.adaptive) the limit AIMD holds against the configured one.

A resource bound to the with-heavy-lock slot (resources.NAME.mkdir_lock) also
shows DIR/slot.d: free, or held with the pid and cmd the holder wrote, marked
"HELD outside governor" when no lease of the resource names that pid (the old
wrapper holds it). A slot.d without a readable pid for longer than 10m is shown
as STUCK with the command that clears it ('governor takeover NAME --force');
nothing removes it silently.

A resource whose processes lease shares of its slots (capacity leases,
docs/capacity.md) lists each share: its lease, the session, host and pid of its
holder, the slots it wanted and had in use at its last refresh, and the slots it
holds. A provider whose processes lease shares of its requests per minute (rate
shares; a rate-only provider too) is listed after the resources, with the
requests granted locally from its shares, a learning mode in force, and each
share: the requests per minute it wanted at its last refresh, the rate and burst
it holds, and the requests it had granted locally by then ("rate_shares" in
--json); then the shares of its tokens per minute the same way, in tokens
(TOKEN SHARE; "token_shares" and "local_tokens").

--json prints one object: {"project", "resources": [{"resource", "limit", "used",
"free", "drift_limit", "limit_source", "not_configured", "holders": [...], "waiters": [...], "counters": {...},
"mkdir_slot": {"path", "state", "pid", "cmd", "since", "outside_governor", "stuck",
"clear"}, "adaptive": {"limit", "max", "successes"}, "cool_off_until",
"last_signal_at", "policy", "policy_text", "drift_policy",
"drift_policy_text", "shares": [{"lease_id", "session", "host", "pid", "wanted",
"held", "used", "expires_in_seconds"}]}], "unreadable": [{"resource", "error"}],
"rate_shares": [{"resource", "local_grants", "learning_until", "shares": [{"lease_id",
"wanted", "held", "burst", "used", "expires_in_seconds"}], "local_tokens",
"token_shares": [...]}]}; times are RFC 3339
and durations are seconds. "limit_source" is live, adaptive, asked, configured or
stale: a run:join or provider:NAME the configuration no longer defines, whose
stored limit is only the one last asked for ("not_configured" says why). A queue policy is shown as the configuration spells
it ("policy_text"; "policy" is the stored encoding). Fields are only ever
added, never renamed.

--watch reads again every second until interrupted. On a terminal it redraws the
screen; into a pipe or a file it writes no escapes: with --json one object per
line per second (JSON Lines), else one block per second, each opened by a line
"-- TIME" (RFC 3339).

A RESOURCE named that is neither configured nor has state is an error naming the
closest known names.

A resource whose state cannot be read (a key of the wrong type) does not hide
the others: it is listed as UNREADABLE with the reason ("unreadable" in --json).

Exit codes: 0 listed (with --watch: interrupted); 125 an unknown RESOURCE, bad
flags, bad config, backend unreachable, or the state of some resource could
not be read (the others are listed).`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			g, err := a.open(ctx, openOptions{})
			if err != nil {
				return err
			}
			defer g.Close()
			if !watch {
				return a.printSlots(ctx, cmd.OutOrStdout(), g, args)
			}
			ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
			defer stop()
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			w := cmd.OutOrStdout()
			screen := runner.IsTerminal(w)
			for {
				var b strings.Builder
				if err := a.watchSlots(ctx, &b, g, args, screen); err != nil {
					return err
				}
				if _, err := io.WriteString(w, b.String()); err != nil {
					return exitWith(exitcode.Failure, err) // the reader is gone
				}
				select {
				case <-ctx.Done():
					return nil
				case <-tick.C:
				}
			}
		},
	}
	cmd.Flags().BoolVar(&watch, "watch", false, "redraw every second until interrupted")
	return cmd
}

// statuses reads the named resources, or every resource with state plus
// every configured one (view.Statuses), failing with 125. Statuses come
// with an error naming the resources whose state could not be read.
func (a *app) statuses(ctx context.Context, g view.StatusSource, names []string) ([]governor.Status, error) {
	l, err := a.load()
	if err != nil {
		return nil, err
	}
	sts, err := view.Statuses(ctx, g, names, l.Config.Limits())
	if err != nil {
		return sts, exitWith(exitcode.Failure, err)
	}
	return sts, nil
}

// watchSlots writes one reading of --watch: the whole screen redrawn on
// a terminal; else one JSON object on one line, or a text block opened by
// a "-- TIME" line.
func (a *app) watchSlots(ctx context.Context, w io.Writer, g *governor.Governor, names []string, screen bool) error {
	if screen {
		fmt.Fprint(w, "\033[H\033[2J")
		return a.printSlots(ctx, w, g, names)
	}
	return a.writeSlots(ctx, w, g, names, view.WriteJSONLine, "-- "+time.Now().UTC().Format(time.RFC3339)+"\n")
}

func (a *app) printSlots(ctx context.Context, w io.Writer, g *governor.Governor, names []string) error {
	return a.writeSlots(ctx, w, g, names, writeJSON, "")
}

// writeSlots writes one reading with enc under --json, else as a table
// after head. A resource that could not be read is listed as such, and
// fails the command (125) once the others are written, as events does.
func (a *app) writeSlots(ctx context.Context, w io.Writer, g *governor.Governor, names []string, enc func(io.Writer, any) error, head string) error {
	sts, err := a.statuses(ctx, g, names)
	if sts == nil && err != nil {
		return err
	}
	rss, rerr := view.RateShares(ctx, g, names)
	if rerr != nil {
		return exitWith(exitcode.Failure, rerr)
	}
	if a.json {
		if werr := enc(w, view.SlotsOf(g.Project(), sts, a.mkdirLocks()).MarkStale(a.unconfigured).Skipping(err).WithRates(rss)); werr != nil {
			return werr
		}
		return err
	}
	fmt.Fprint(w, head)
	if len(names) == 0 && err == nil && view.AllIdle(sts, a.mkdirLocks()) {
		// No slot to see: one line, not a block per configured resource;
		// then the rate shares held, if any.
		held := "nothing held"
		if len(rss) > 0 {
			held = "no slot held"
		}
		fmt.Fprintf(w, "%s, nobody waiting in project %s (%d resources; 'governor slots NAME' or --json shows each)\n", held, dash(g.Project()), len(sts))
		if len(rss) > 0 {
			fmt.Fprintln(w)
			view.WriteRateShares(w, rss)
		}
		return nil
	}
	view.WriteSlots(w, g.Project(), sts, rss, a.mkdirLocks(), a.limitNote, err)
	return err
}

// mkdirLocks are the resources bound to a mkdir slot, from the
// configuration (nil when it cannot be loaded: statuses reports that).
func (a *app) mkdirLocks() map[string]string {
	l, err := a.load()
	if err != nil {
		return nil
	}
	return l.Config.MkdirLocks()
}

// unconfigured says why the configuration no longer defines resource
// (config.Catalog.Unconfigured; "" when it does, or cannot be loaded).
func (a *app) unconfigured(resource string) string {
	l, err := a.load()
	if err != nil {
		return ""
	}
	return l.Catalog().Unconfigured(resource)
}

// limitNote says, for a resource the configuration gives no limit, what
// its limit is (acquire.LimitFor): "" for a configured one.
func (a *app) limitNote(resource string) string {
	l, err := a.load()
	if err != nil {
		return ""
	}
	if _, ok := l.Catalog().Resource(resource); ok {
		return ""
	}
	if why := l.Catalog().Unconfigured(resource); why != "" {
		return "not configured: " + why
	}
	return fmt.Sprintf("not configured: the limit last given (--limit, 'governor limit') rules, else 1: a mutex; set resources.%s.limit in exec-defaults.yaml", resource)
}

// dash and writeJSON are view's, for the commands' own output.
func dash(s string) string { return view.Dash(s) }

func writeJSON(w io.Writer, v any) error { return view.WriteJSON(w, v) }
