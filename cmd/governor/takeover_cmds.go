package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/acquire"
	"github.com/governor-dev/governor/internal/exitcode"
	"github.com/governor-dev/governor/internal/view"
)

func (a *app) takeoverCmd() *cobra.Command {
	var (
		leaseID, session string
		force            bool
		limit            int
		pid              int
		ttl              time.Duration
	)
	cmd := &cobra.Command{
		Use:   "takeover [RESOURCE] (--lease ID | --session ID)",
		Short: "Take over an expired or dead-owner lease (or, with --force, any lease)",
		Example: `  governor takeover heavy --lease 2b69c0de
  governor takeover --session ci-42`,
		Long: `takeover replaces a lease of RESOURCE — one by --lease ID, or every lease of a
session by --session ID (a relay session picking up its predecessor's work) — by a
new lease with the same weight and a new, higher fencing token. The old holder's
next renewal fails and its fenced writes ('governor seq next') are refused.

It is allowed when the owner is proven dead on this host (its pid is gone or now
names another process) or when the lease has expired or was reclaimed (its slot
is then taken if it is free, weight 1). An owner that may be alive — alive on
this host, or on another host — is refused, naming it, unless --force. Every
takeover is recorded ('governor events'), an expired lease's too: the event names
the session that took it. A lease that was released, was taken over already, or
never existed is "nothing to take over" (exit 73), and no lease is handed out.

A refusal of run or acquire prints this command for each holder, with the global
flags that select the same store (--config, --project, --dir, --backend, or the
Redis URL: its password redacted, or "$GOVERNOR_REDIS_URL" when it came from
there), so that pasting it acts on the store that refused.

Without RESOURCE, --session ID takes over every lease session ID holds on any
resource of the project (a relay restart: the next session continues with all of
its predecessor's locks), one resource after another in the lock order
(lock_order, then name), each recorded. Every owner is checked first: if one may
be alive (and no --force), nothing is taken (exit 73). Should a takeover fail
after that (the backend, or another session took one over in between), it stops
there: the leases already taken are printed and stay held (the old session has
lost them, so nothing is given back), stderr names the resources taken, the one
where it stopped and those not tried, and the exit code is that of the failure
(73, or 125 for the backend). Leases of the session that already expired are no
longer its own: take them over by --lease.

The new lease outlives this command, like 'governor acquire' (see its --pid and
--ttl): it prints RESOURCE@LEASE_ID.SECRET and the token for each lease taken.

For a resource bound to the with-heavy-lock slot (resources.NAME.mkdir_lock),
'governor takeover NAME --force' with no --lease and no --session removes a
DIR/slot.d that 'slots' shows as stuck (no readable pid) or whose pid is dead;
one naming a live pid is refused (73): stop that process instead.

Exit codes: 0 taken over (with --session and no RESOURCE: all of them); 73 refused
(owner alive; nothing to take over: released, taken over already or unknown; or
the expired lease's slot was taken by someone else); 125 bad input or backend
unreachable. A session takeover that stopped midway exits with the code of the
failure (73 or 125), after printing the leases it took.`,
		Args: cobra.RangeArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 && leaseID == "" && session == "" && force {
				if l, err := a.load(); err == nil && l.Config.MkdirLocks()[args[0]] != "" {
					return clearMkdirSlot(cmd, args[0], l.Config.MkdirLocks()[args[0]])
				}
			}
			if (leaseID == "") == (session == "") {
				return exitWith(exitcode.Failure, fmt.Errorf("give exactly one of --lease ID or --session ID"))
			}
			resource := ""
			if len(args) == 1 {
				resource = args[0]
			} else if leaseID != "" {
				return exitWith(exitcode.Failure, fmt.Errorf("--lease needs the RESOURCE it is a lease of"))
			}
			if resource != "" {
				// The one limit rule: the configured limit, else --limit
				// (1 when neither: an expired lease's slot of weight 1).
				l, err := a.load()
				if err != nil {
					return err
				}
				switch limit, _, err = acquire.LimitFor(l.Catalog(), resource, limit); {
				case errors.Is(err, acquire.ErrNoLimit):
					limit = 1
				case err != nil:
					return exitWith(exitcode.Failure, err)
				}
			}
			what := resource
			if what == "" {
				what = "--session " + session
			}
			g, err := a.open(cmd.Context(), openOptions{PID: holderPID(pid), Command: "governor takeover " + what})
			if err != nil {
				return err
			}
			defer g.Close()
			o := governor.TakeoverOptions{LeaseID: leaseID, Session: session, Force: force, TTL: ttl, NoHeartbeat: true}
			var ls []*governor.Lease
			if resource == "" {
				ls, err = g.TakeoverSession(cmd.Context(), session, o)
			} else {
				ls, err = g.Takeover(cmd.Context(), resource, limit, o)
			}
			// Leases taken are printed even when a session takeover
			// stopped midway: they are held now.
			var out []map[string]any
			for _, l := range ls {
				l.Detach()
				if a.json {
					out = append(out, map[string]any{"lease": l.Handle().String(), "resource": l.Resource(),
						"lease_id": l.ID(), "token": l.Token(), "expires_at": l.Expires().UTC()})
				} else {
					fmt.Fprintf(cmd.OutOrStdout(), "%s %d\n", l.Handle(), l.Token())
				}
			}
			if a.json && (err == nil || len(ls) > 0) {
				if werr := writeJSON(cmd.OutOrStdout(), out); werr != nil && err == nil {
					return werr
				}
			}
			var busy *governor.BusyError
			switch {
			case errors.As(err, &busy) && len(ls) == 0:
				return acquire.Refused(busy, false)
			case errors.Is(err, governor.ErrNotHeld):
				return exitWith(exitcode.Busy, err) // nothing to take over
			}
			return err // exitcode.For: busy and an owner alive 73, else 125
		},
	}
	f := cmd.Flags()
	f.StringVar(&leaseID, "lease", "", "the lease id to take over (as shown by 'governor slots')")
	f.StringVar(&session, "session", "", "take over every lease of this session on RESOURCE, or without RESOURCE on every resource of the project")
	f.BoolVar(&force, "force", false, "take over even if the owner may be alive (it will lose the lease at its next renewal)")
	f.IntVar(&limit, "limit", 0, "the resource's limit when the configuration has none (for an expired lease's slot)")
	f.DurationVar(&ttl, "ttl", 0, "time to live of the new lease (default: lease.ttl from the configuration)")
	f.IntVar(&pid, "pid", 0, "declare this process (e.g. $$) as the new holder (default: none)")
	return cmd
}

func (a *app) seqCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "seq", Short: "Fenced sequences: numbers that never repeat (version numbers, ids)",
		Example: `  governor seq next version --lease "$lease"`,
		Long: `seq hands out fenced sequence numbers: see 'governor seq next --help'.

Exit codes: 0 this help; those of each subcommand.`}
	var lease string
	next := &cobra.Command{
		Use:   "next NAME [--lease RESOURCE@LEASE_ID.SECRET]",
		Short: "Print the next number of sequence NAME, for the holder of a lease",
		Example: `  governor seq next version --lease "$lease"
  GOVERNOR_LEASE="$lease" governor seq next build-id`,
		Long: `next prints the next number (from 1) of sequence NAME. The lease must be held, and
its fencing token must be at least the newest token already used for NAME, so two
sessions never get the same number, also across takeovers. One rule for the
refusals: a lease that is no longer held (expired, released, or taken over: a
takeover ends the old lease) exits 122, as renew and run do for a lost lease; a
lease still held whose token is older than one NAME already saw (a newer lease,
of this resource or another, wrote NAME) exits 73: this lease must not write it. The handle must carry the lease's SECRET (as
acquire printed it, or as GOVERNOR_HELD gives it to a run's command). Without
--lease it is read from $GOVERNOR_LEASE, which keeps the secret out of ps.

Exit codes: 0 printed; 73 the lease is held but its token is older than one NAME
already saw; 122 the lease is not held (expired, released or taken over); 125 bad
input (a handle without its secret included) or backend unreachable.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			g, h, err := a.openLeaseArg(cmd.Context(), []string{lease})
			if err != nil {
				return err
			}
			defer g.Close()
			holder, err := g.CheckHandle(cmd.Context(), h)
			switch {
			case errors.Is(err, governor.ErrNotOwner):
				return notOwner(public(h), err)
			case errors.Is(err, governor.ErrNotHeld):
				return exitWith(exitcode.LeaseLost, fmt.Errorf("lease %s is not held (expired, released or taken over); stop writing", public(h)))
			case err != nil:
				return exitWith(exitcode.Failure, err)
			}
			token := holder.Token
			n, err := g.NextSeq(cmd.Context(), args[0], token)
			if errors.Is(err, governor.ErrStaleToken) {
				return exitWith(exitcode.Busy, fmt.Errorf("sequence %s: refused: %w: lease %s (token %d) is held, but a newer lease's token already used %s; "+
					"this lease must not write it", args[0], err, public(h), token, args[0]))
			}
			if err != nil {
				return exitWith(exitcode.Failure, err)
			}
			if a.json {
				return writeJSON(cmd.OutOrStdout(), map[string]any{"sequence": args[0], "number": n, "token": token})
			}
			fmt.Fprintln(cmd.OutOrStdout(), n)
			return nil
		},
	}
	next.Flags().StringVar(&lease, "lease", "", "the lease (RESOURCE@LEASE_ID.SECRET) whose fencing token authorises the write (default $GOVERNOR_LEASE)")
	cmd.AddCommand(next)
	return cmd
}

func (a *app) eventsCmd() *cobra.Command {
	var since string
	cmd := &cobra.Command{
		Use:   "events [RESOURCE...]",
		Short: "Show takeovers, reclaims (expired, owner dead) and lost leases, with who and when",
		Example: `  governor events
  governor events heavy --since 1h
  governor events --json`,
		Long: `events lists what happened to leases that their holders did not do themselves:
expired (a holder stopped renewing), reclaimed (its owner was proven dead),
takeover (who took it, with the new lease and token), lost (a holder found it had
lost its lease), drift (a process asked for another limit than the one in force),
repaired and dropped (the backend found its state contradicting itself and
recounted it, or dropped an unreadable queue entry), quarantine (Redis lost its
data: grants held back), unreadable (an event that could not be read, in its place),
and the admin actions, each naming who did it: cancelled (a waiter withdrawn by
'governor cancel'), paused, resumed, limit (a live limit set or cleared).
Each resource keeps its last 1000 events.

--json prints one array: [{"at", "resource", "kind", "lease_id", "token", "detail",
"by"}], oldest first ("by", who acted, only for the admin actions).

Exit codes: 0 listed; 125 bad flags, bad config, backend unreachable, or the
events of some resource could not be read (the others are listed).`,
		RunE: func(cmd *cobra.Command, args []string) error {
			from, err := view.Since(since, time.Now())
			if err != nil {
				return exitWith(exitcode.Failure, fmt.Errorf("--%w", err))
			}
			g, err := a.open(cmd.Context(), openOptions{})
			if err != nil {
				return err
			}
			defer g.Close()
			rows, err := view.ReadEvents(cmd.Context(), g, args, from)
			if rows == nil {
				return exitWith(exitcode.Failure, err)
			}
			failed := err
			if a.json {
				err = writeJSON(cmd.OutOrStdout(), rows)
			} else {
				err = view.WriteEvents(cmd.OutOrStdout(), rows)
			}
			if err == nil && failed != nil {
				err = exitWith(exitcode.Failure, failed)
			}
			return err
		},
	}
	cmd.Flags().StringVar(&since, "since", "", "only events in this past duration, a positive duration such as 90s or 1h (default: all kept)")
	return cmd
}
