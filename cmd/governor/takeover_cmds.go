package main

import (
	"errors"
	"fmt"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/governor-dev/governor/governor"
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
		Use:   "takeover RESOURCE (--lease ID | --session ID)",
		Short: "Take over an expired or dead-owner lease (or, with --force, any lease)",
		Long: `takeover replaces a lease of RESOURCE — one by --lease ID, or every lease of a
session by --session ID (a relay session picking up its predecessor's work) — by a
new lease with the same weight and a new, higher fencing token. The old holder's
next renewal fails and its fenced writes ('governor seq next') are refused.

It is allowed when the owner is proven dead on this host (its pid is gone or now
names another process) or when the lease has expired (its slot is then simply
free). An owner that may be alive — alive on this host, or on another host — is
refused, naming it, unless --force. Every takeover is recorded ('governor events').

The new lease outlives this command, like 'governor acquire' (see its --pid and
--ttl): it prints RESOURCE@LEASE_ID and the token for each lease taken.

Exit codes: 0 taken over; 73 refused (owner alive, nothing to take over, or the
expired lease's slot was taken by someone else); 125 bad input or backend unreachable.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			resource := args[0]
			if (leaseID == "") == (session == "") {
				return exitWith(ExitFailure, fmt.Errorf("give exactly one of --lease ID or --session ID"))
			}
			if limit == 0 {
				if l, err := a.load(); err == nil {
					limit = l.Config.Limits()[resource]
				}
			}
			g, err := a.open(cmd.Context(), openOptions{PID: holderPID(pid), Command: "governor takeover " + resource})
			if err != nil {
				return err
			}
			defer g.Close()
			ls, err := g.Takeover(cmd.Context(), resource, max(limit, 1), governor.TakeoverOptions{LeaseID: leaseID, Session: session, Force: force, TTL: ttl, NoHeartbeat: true})
			var busy *governor.BusyError
			switch {
			case errors.As(err, &busy):
				return refusal(busy, false)
			case errors.Is(err, governor.ErrOwnerAlive), errors.Is(err, governor.ErrNotHeld):
				return exitWith(ExitBusy, err)
			case err != nil:
				return exitWith(ExitFailure, err)
			}
			var out []map[string]any
			for _, l := range ls {
				l.Detach()
				if a.json {
					out = append(out, map[string]any{"lease": leaseHandle(resource, l.ID()), "resource": resource,
						"lease_id": l.ID(), "token": l.Token(), "expires_at": l.Expires().UTC()})
				} else {
					fmt.Fprintf(cmd.OutOrStdout(), "%s %d\n", leaseHandle(resource, l.ID()), l.Token())
				}
			}
			if a.json {
				return writeJSON(cmd.OutOrStdout(), out)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&leaseID, "lease", "", "the lease id to take over (as shown by 'governor slots')")
	f.StringVar(&session, "session", "", "take over every lease of this session on RESOURCE")
	f.BoolVar(&force, "force", false, "take over even if the owner may be alive (it will lose the lease at its next renewal)")
	f.IntVar(&limit, "limit", 0, "the resource's limit when the configuration has none (for an expired lease's slot)")
	f.DurationVar(&ttl, "ttl", 0, "time to live of the new lease (default: lease.ttl from the configuration)")
	f.IntVar(&pid, "pid", 0, "declare this process (e.g. $$) as the new holder (default: none)")
	return cmd
}

func (a *app) seqCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "seq", Short: "Fenced sequences: numbers that never repeat (version numbers, ids)",
		Long: `seq hands out fenced sequence numbers: see 'governor seq next --help'.

Exit codes: 0 this help; those of each subcommand.`}
	var lease string
	next := &cobra.Command{
		Use:   "next NAME --lease RESOURCE@LEASE_ID",
		Short: "Print the next number of sequence NAME, for the holder of a lease",
		Long: `next prints the next number (from 1) of sequence NAME. The lease must be held, and
its fencing token must be at least the newest token already used for NAME: a
holder whose lease was taken over is refused (exit 73), so two sessions never get
the same number, also across takeovers.

Exit codes: 0 printed; 73 stale token (the lease was taken over); 122 the lease is
not held; 125 bad input or backend unreachable.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			g, resource, id, err := a.openLease(cmd.Context(), lease)
			if err != nil {
				return err
			}
			defer g.Close()
			st, err := g.Status(cmd.Context(), resource)
			if err != nil {
				return exitWith(ExitFailure, err)
			}
			var token int64
			for _, h := range st.Holders {
				if h.LeaseID == id {
					token = h.Token
				}
			}
			if token == 0 {
				return exitWith(ExitLeaseLost, fmt.Errorf("lease %s is not held (expired, released or taken over)", lease))
			}
			n, err := g.NextSeq(cmd.Context(), args[0], token)
			if errors.Is(err, governor.ErrStaleToken) {
				return exitWith(ExitBusy, fmt.Errorf("sequence %s: refused: %w; the lease was taken over, stop writing", args[0], err))
			}
			if err != nil {
				return exitWith(ExitFailure, err)
			}
			if a.json {
				return writeJSON(cmd.OutOrStdout(), map[string]any{"sequence": args[0], "number": n, "token": token})
			}
			fmt.Fprintln(cmd.OutOrStdout(), n)
			return nil
		},
	}
	next.Flags().StringVar(&lease, "lease", "", "the lease (RESOURCE@LEASE_ID) whose fencing token authorises the write")
	_ = next.MarkFlagRequired("lease")
	cmd.AddCommand(next)
	return cmd
}

func (a *app) eventsCmd() *cobra.Command {
	var since time.Duration
	cmd := &cobra.Command{
		Use:   "events [RESOURCE...]",
		Short: "Show takeovers, reclaims (expired, owner dead) and lost leases, with who and when",
		Long: `events lists what happened to leases that their holders did not do themselves:
expired (a holder stopped renewing), reclaimed (its owner was proven dead),
takeover (who took it, with the new lease and token), lost (a holder found it had
lost its lease), drift (a process asked for another limit than the one in force),
repaired and dropped (the backend found its state contradicting itself and
recounted it, or dropped an unreadable queue entry), quarantine (Redis lost its
data: grants held back), unreadable (an event that could not be read, in its place).
Each resource keeps its last 1000 events.

--json prints one array: [{"at", "resource", "kind", "lease_id", "token", "detail"}],
oldest first.

Exit codes: 0 listed; 125 bad flags, bad config, backend unreachable, or the
events of some resource could not be read (the others are listed).`,
		RunE: func(cmd *cobra.Command, args []string) error {
			g, err := a.open(cmd.Context(), openOptions{})
			if err != nil {
				return err
			}
			defer g.Close()
			names := args
			if len(names) == 0 {
				if names, err = g.Resources(cmd.Context()); err != nil {
					return exitWith(ExitFailure, err)
				}
			}
			var from time.Time
			if since > 0 {
				from = time.Now().Add(-since)
			}
			type row struct {
				At       time.Time `json:"at"`
				Resource string    `json:"resource"`
				Kind     string    `json:"kind"`
				LeaseID  string    `json:"lease_id"`
				Token    int64     `json:"token"`
				Detail   string    `json:"detail"`
			}
			rows := []row{}
			// One resource whose events cannot be read does not hide the
			// others': it is named after them, and the exit is 125.
			var failed []error
			for _, n := range names {
				evs, err := g.Events(cmd.Context(), n, from)
				if err != nil {
					failed = append(failed, fmt.Errorf("events of %s: %w", n, err))
					continue
				}
				for _, e := range evs {
					rows = append(rows, row{e.At.UTC(), n, e.Kind, e.LeaseID, e.Token, e.Detail})
				}
			}
			sort.SliceStable(rows, func(i, j int) bool { return rows[i].At.Before(rows[j].At) })
			if a.json {
				err = writeJSON(cmd.OutOrStdout(), rows)
			} else {
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "TIME\tRESOURCE\tEVENT\tLEASE\tTOKEN\tDETAIL")
				for _, r := range rows {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", r.At.Local().Format("2006-01-02 15:04:05"), r.Resource, r.Kind, r.LeaseID, r.Token, dash(r.Detail))
				}
				err = tw.Flush()
			}
			if err == nil && len(failed) > 0 {
				err = exitWith(ExitFailure, errors.Join(failed...))
			}
			return err
		},
	}
	cmd.Flags().DurationVar(&since, "since", 0, "only events in this past duration, e.g. 1h (default: all kept)")
	return cmd
}
