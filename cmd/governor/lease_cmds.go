package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/leasetiming"
	"github.com/governor-dev/governor/internal/acquire"
	"github.com/governor-dev/governor/internal/exitcode"
)

// parseHandle reads a lease handle (governor.ParseHandle), exiting 125
// on a bad one.
func parseHandle(h string) (governor.Handle, error) {
	hd, err := governor.ParseHandle(h)
	if err != nil {
		return governor.Handle{}, exitWith(exitcode.Failure, err)
	}
	return hd, nil
}

// envLease is where renew, release and 'seq next' find the lease handle
// when none is given: unlike an argument, which every user sees in ps,
// the environment of a process is its user's alone, and so is the
// handle's secret.
const envLease = "GOVERNOR_LEASE"

// leaseArg returns the lease handle of a command: its argument, else
// $GOVERNOR_LEASE.
func (a *app) leaseArg(args []string) (string, error) {
	if len(args) > 0 && args[0] != "" {
		return args[0], nil
	}
	for i := len(a.env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(a.env[i], envLease+"="); ok && v != "" {
			return v, nil
		}
	}
	return "", exitWith(exitcode.Failure, fmt.Errorf("no lease: give %s as an argument or, to keep its secret out of ps, in $%s", governor.HandleForm, envLease))
}

// tokenFlag is --token of renew and touch: the lease's fencing token, as
// 'governor acquire' printed it beside the handle; 0 when not given.
type tokenFlag int64

func (f *tokenFlag) String() string { return strconv.FormatInt(int64(*f), 10) }
func (f *tokenFlag) Type() string   { return "N" }
func (f *tokenFlag) Set(s string) error {
	n, err := parseToken(s)
	*f = tokenFlag(n)
	return err
}

// tokenForm says what --token and a plain $GOVERNOR_TOKEN take.
const tokenForm = "a whole number from 1: the token 'governor acquire' printed after the handle"

func parseToken(s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%q is not a fencing token; allowed: %s", s, tokenForm)
	}
	return n, nil
}

// leaseToken returns the fencing token that goes with a renewal or mark
// of lease h: flag (--token) when given, else $GOVERNOR_TOKEN: a number,
// as acquire printed it, when h is the only lease named (only), or the
// list of a 'governor run' (PROJECT/RESOURCE=TOKEN,..., beside
// GOVERNOR_HELD), the token of h's lease id there; else 0, unknown
// (the renewal is then no evidence that Redis lost its data). A
// malformed $GOVERNOR_TOKEN (or, when h's entry is not found, a
// malformed list) exits 125 naming it.
func (a *app) leaseToken(flag tokenFlag, h governor.Handle, only bool) (int64, error) {
	if flag != 0 {
		return int64(flag), nil
	}
	v := acquire.Getenv(a.env, acquire.EnvToken)
	switch {
	case v == "":
		return 0, nil
	case !strings.Contains(v, "="):
		n, err := parseToken(v)
		if err != nil {
			return 0, exitWith(exitcode.Failure, fmt.Errorf("$%s: %w (or a 'governor run' list PROJECT/RESOURCE=TOKEN,...)", acquire.EnvToken, err))
		}
		if !only {
			return 0, nil
		}
		return n, nil
	}
	held, err := acquire.HeldFromEnv(a.env) // the well-formed entries, even with err
	for _, l := range held {
		if l.LeaseID == h.ID {
			return l.Token, nil
		}
	}
	if err != nil { // the malformed entry may be this lease's
		return 0, exitWith(exitcode.Failure, err)
	}
	return 0, nil
}

// public is the handle without its secret, for messages.
func public(h governor.Handle) string {
	return governor.Handle{Resource: h.Resource, ID: h.ID}.String()
}

// notOwner is the exit error of a handle whose secret is missing or
// wrong.
func notOwner(handle string, err error) error {
	return exitWith(exitcode.Failure, fmt.Errorf("lease %s: %w; give the whole handle %s (the lease id alone is public: anyone can read it in 'governor slots')", handle, err, governor.HandleForm))
}

// ifBusy is the --if-busy flag: fail, wait or skip; "" when not given
// (acquire.ResolveIfBusy decides what that means).
type ifBusy string

func (b *ifBusy) String() string { return string(*b) }
func (b *ifBusy) Type() string   { return "fail|wait|skip" }
func (b *ifBusy) Set(s string) error {
	if _, err := acquire.ResolveIfBusy(s, 0); err != nil || s == "" {
		return fmt.Errorf("%q is not allowed; use fail, wait or skip", s)
	}
	*b = ifBusy(s)
	return nil
}

func (a *app) acquireCmd() *cobra.Command {
	var (
		weight      int
		limit       int
		exclusive   bool
		ttl         time.Duration
		busy        ifBusy
		waitTimeout time.Duration
		session     string
		pid         int
		progress    time.Duration
		priority    string
		fairKey     string
		supersede   string
		cancelRun   bool
		spendReq    acquire.SpendRequest
	)
	cmd := &cobra.Command{
		Use:   "acquire RESOURCE",
		Short: "Take a lease that outlives this command, for shell scripts",
		Example: `  lease=$(governor acquire heavy --ttl 10m --pid $$) || exit
  governor acquire gpu --limit 2 --if-busy wait --wait-timeout 5m`,
		Long: `acquire takes slots of RESOURCE and leaves the lease held after it exits. It then
lives by its --ttl: renew it with 'governor renew' before it expires, free it with
'governor release'. With --pid $$ the lease is declared as held by your shell:
when that process dies, the lease is reclaimed on this host at once. (Without
--pid no process is declared, since the parent of a command in $(...) or a
pipeline is a short-lived subshell that would look dead at once.)

Prints the lease handle RESOURCE@LEASE_ID.SECRET and the fencing token, or with
--json {"lease", "resource", "lease_id", "token", "expires_at"}, and "limit_note" when
--limit is not the limit in force: a configured limit wins over --limit, and the
limit the backend holds wins while the resource is in use (also said on stderr).

  out=$(governor acquire heavy --ttl 10m --pid $$) || exit   # stops with 73, 75 or 125
  read -r GOVERNOR_LEASE token <<<"$out"; export GOVERNOR_LEASE
  ... ; governor renew || exit ; ...
  governor release

(Not 'read ... < <(governor acquire ...)': that loses the exit code, and the
script carries on with an empty lease.)

The handle's SECRET proves that you hold the lease: renew, release and 'seq next'
need it. Keep it to yourself (it is not shown by 'governor slots', which shows the
LEASE_ID, public); pass it only to processes that act for the holder, in
$GOVERNOR_LEASE, where renew, release and 'seq next' read it when given no
handle: an argument is visible to every user in ps while the command runs.

When busy: --if-busy fail (default) exits 73, skip exits 75, wait queues up to
--wait-timeout (--wait-timeout alone implies wait, as for 'governor run').

A resource bound to the with-heavy-lock slot (resources.NAME.mkdir_lock) is
refused (125): only 'governor run' holds that slot.

--progress-timeout D: the lease is lost once no progress mark came for D, even
if its TTL is longer: 'governor renew' and 'governor touch RESOURCE@LEASE_ID'
mark progress (the grant counts as the first); after D, renew and touch exit
122, and the slot stays held until release or expiry.

--priority CLASS and --fair-key KEY: where to queue on a resource with a queue
policy (docs/queue-policies.md); its max_queue refuses at once and its
max_wait drops the waiter, both exit 73 naming the bound.

--cost N (or --max-tokens, as for 'governor run'): once the slot is held, N is
reserved on every spend budget that applies (docs/budgets.md), under the lease's
LEASE_ID. 'governor settle --cost N' with $GOVERNOR_LEASE settles it; 'governor
release' settles what is left at its estimate. A cost that does not fit exits 73
(75 with --if-busy skip) naming the budget, and the slot is freed.

Exit codes: 0 acquired; 73 busy (--if-busy fail) or --wait-timeout passed,
or the queue policy's max_queue or max_wait, or the wait was cancelled
('governor cancel'); 76 superseded while waiting
(--supersede);
75 busy with --if-busy skip; 125 bad flags, config or backend unreachable, or
RESOURCE bound to the with-heavy-lock slot.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := limitGiven(cmd, limit); err != nil {
				return err
			}
			resource := args[0]
			if weight < 1 {
				return exitWith(exitcode.Failure, fmt.Errorf("--weight %d; allowed: 1 to the limit", weight))
			}
			l, err := a.load()
			if err != nil {
				return err
			}
			// The lease is detached at once: it lives by its TTL and
			// 'governor renew', and never heartbeats.
			plan, err := acquire.NewPlan(l.Catalog(), acquire.Request{Resources: []string{resource}, Exact: true, Weight: weight,
				Limit: limit, Exclusive: exclusive, IfBusy: string(busy), WaitTimeout: waitTimeout, TTL: ttl, ProgressTimeout: progress,
				Priority: priority, FairKey: fairKey, Supersede: supersede, CancelInProgress: cancelRun, Detached: true})
			if err != nil {
				return exitWith(exitcode.Failure, err)
			}
			spend, err := a.planAcquireSpend(l.Config, spendReq, resource, fairKey, session, cmd.ErrOrStderr())
			if err == nil {
				// Under the lease: 'governor settle' proves it by the
				// handle in $GOVERNOR_LEASE, 'governor release' settles it.
				err = plan.SetSpend(spend, "", ttl)
			}
			if err != nil {
				return exitWith(exitcode.Failure, err)
			}
			g, err := a.open(cmd.Context(), openOptions{Session: session, PID: holderPID(pid), Command: "governor acquire " + resource})
			if err != nil {
				return err
			}
			defer g.Close()
			held, err := plan.Acquire(cmd.Context(), g, acquire.Events{
				OnNote: func(msg string) { fmt.Fprintln(cmd.ErrOrStderr(), "governor: "+msg) }})
			if err != nil {
				return err
			}
			l0 := held.Leases()[0]
			if a.json {
				out := map[string]any{"lease": l0.Handle().String(), "resource": resource,
					"lease_id": l0.ID(), "token": l0.Token(), "expires_at": l0.Expires().UTC()}
				if notes := held.LimitNotes(); len(notes) > 0 {
					out["limit_note"] = notes[0]
				}
				if spend != nil {
					out["spend"] = map[string]any{"lease": l0.ID(), "budgets": spend.Names(), "estimate": spend.Estimate}
				}
				return writeJSON(cmd.OutOrStdout(), out)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %d\n", l0.Handle(), l0.Token())
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&weight, "weight", 1, "slots to take")
	f.IntVar(&limit, "limit", 0, "the resource's limit when the configuration has none (said on stderr when not applied; default: the limit last given, else 1: a mutex)")
	f.BoolVar(&exclusive, "exclusive", false, "take the whole limit")
	f.DurationVar(&ttl, "ttl", 0, fmt.Sprintf("lease time to live, %v to %v; it does not heartbeat (default: lease.ttl from the configuration, %v)", leasetiming.MinTTL, leasetiming.MaxTTL, leasetiming.DefaultTTL))
	f.Var(&busy, "if-busy", "when the resource is full: fail (exit 73, the default), wait, or skip (exit 75)")
	f.DurationVar(&waitTimeout, "wait-timeout", 0, "give up waiting after this long (exit 73); implies --if-busy wait")
	f.StringVar(&session, "session", "", "session id declared to other holders (default $GOVERNOR_SESSION, else host:pid)")
	f.IntVar(&pid, "pid", 0, "declare this process (e.g. $$) as the holder: when it dies the lease is reclaimed at once (default: none)")
	f.BoolVar(&a.quiet, "quiet", false, "print nothing when not acquired (busy, skipped, --wait-timeout passed): the exit code tells")
	f.DurationVar(&progress, "progress-timeout", 0, "lose the lease when no progress mark ('governor renew', 'governor touch') comes for this long (default: none)")
	f.StringVar(&priority, "priority", "", "the priority class to queue in, when the resource's config has priorities (default: the class named default, else the lowest)")
	f.StringVar(&supersede, "supersede", "", "supersede key: a newer acquire with the same key replaces this one while it waits (exit 76)")
	f.BoolVar(&cancelRun, "cancel-in-progress", false, "with --supersede and --if-busy wait: also cancel the lease of a holder with the same key (its renewals fail, exit 122; it keeps its slots until released, while this one waits)")
	f.StringVar(&fairKey, "fair-key", "", "the fair key (tenant, agent, session) to queue under, when the resource has fairness: keys take turns")
	spendFlags(f, &spendReq)
	return cmd
}

// holderPID maps a --pid flag to governor.Options.PID: 0 declares no
// process.
func holderPID(pid int) int {
	if pid == 0 {
		return governor.NoPID
	}
	return pid
}

// openLease parses a lease handle and opens the Governor that serves it.
// The caller closes the Governor.
func (a *app) openLease(ctx context.Context, handle string, oo openOptions) (*governor.Governor, governor.Handle, error) {
	h, err := parseHandle(handle)
	if err != nil {
		return nil, governor.Handle{}, err
	}
	g, err := a.open(ctx, oo)
	if err != nil {
		return nil, governor.Handle{}, err
	}
	return g, h, nil
}

// openLeaseArg is openLease of the handle leaseArg finds in args or the
// environment.
func (a *app) openLeaseArg(ctx context.Context, args []string) (*governor.Governor, governor.Handle, error) {
	arg, err := a.leaseArg(args)
	if err != nil {
		return nil, governor.Handle{}, err
	}
	return a.openLease(ctx, arg, openOptions{})
}

func (a *app) renewCmd() *cobra.Command {
	var (
		ttl   time.Duration
		token tokenFlag
	)
	cmd := &cobra.Command{
		Use:   "renew [RESOURCE@LEASE_ID.SECRET]",
		Short: "Extend a lease taken with 'governor acquire'",
		Example: `  governor renew "$lease"
  GOVERNOR_LEASE="$lease" governor renew --ttl 20m`,
		Long: `renew extends the lease to now + --ttl and marks progress (see 'governor acquire
--progress-timeout'). A lease that has expired, was released or taken over, or
got no progress mark within its --progress-timeout, is not re-acquired: renew
exits 122 and the script must stop the work the lease protected. The handle must
carry the lease's SECRET, as acquire printed it: the lease id alone is public
(leases granted by a governor from before secrets are renewed by their id).
Without an argument the handle is read from $GOVERNOR_LEASE, which keeps the
secret out of ps (an argument is visible to every user while the command runs).

Give the lease's fencing token too, as acquire printed it after the handle
(--token N, or $GOVERNOR_TOKEN): on Redis, a renewal that carries it and finds
the lease gone from a state born after it (Redis lost its data and a newcomer
started afresh) holds new grants back for the longest lease TTL known, else
lease.ttl's default (a quarantine, 'governor events'); without it the renewal
only learns that the lease is lost. $GOVERNOR_TOKEN may also be the list a
'governor run' gives its command, where the token of this lease id is taken.

  read -r GOVERNOR_LEASE token <<<"$out"; export GOVERNOR_LEASE
  governor renew --token "$token" || exit   # the token is public; not exported: a
                                            # 'governor run' reads $GOVERNOR_TOKEN as its list

Exit codes: 0 renewed; 122 the lease is lost; 125 bad input (a handle without its
secret included, a --token or $GOVERNOR_TOKEN that is no token) or backend
unreachable.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			g, h, err := a.openLeaseArg(cmd.Context(), args)
			if err != nil {
				return err
			}
			defer g.Close()
			if h.Token, err = a.leaseToken(token, h, true); err != nil {
				return err
			}
			exp, err := g.RenewHandle(cmd.Context(), h, ttl)
			if err == nil {
				err = g.TouchHandle(cmd.Context(), h) // a renewal is a sign of progress
			}
			if errors.Is(err, governor.ErrNotOwner) {
				return notOwner(public(h), err)
			}
			if errors.Is(err, governor.ErrLeaseLost) {
				return exitWith(exitcode.LeaseLost, fmt.Errorf("lease %s is lost (%s); stop the work it protected", public(h), lostWhy(err)))
			}
			if err != nil {
				return exitWith(exitcode.Failure, err)
			}
			if a.json {
				return writeJSON(cmd.OutOrStdout(), map[string]any{"lease": public(h), "expires_at": exp.UTC()})
			}
			return nil
		},
	}
	cmd.Flags().DurationVar(&ttl, "ttl", 0, "new time to live (default: the lease's own, as acquired)")
	cmd.Flags().Var(&token, "token", "the lease's fencing token, as acquire printed it (default $GOVERNOR_TOKEN): a renewal after Redis lost its data then holds new grants back")
	return cmd
}

func (a *app) releaseCmd() *cobra.Command {
	var (
		force bool
		pid   int
	)
	cmd := &cobra.Command{
		Use:   "release [RESOURCE@LEASE_ID.SECRET]",
		Short: "Free a lease taken with 'governor acquire'",
		Example: `  governor release "$lease"
  GOVERNOR_LEASE="$lease" governor release`,
		Long: `release frees the lease's slots and hands them to the next waiter. The handle's
SECRET, as acquire printed it, proves that the lease is yours. A lease that is no
longer held (expired, released, taken over) exits 122: the work it protected may
have overlapped another holder.

RESOURCE@LEASE_ID without the secret only names a lease (the id is public: anyone
can read it in 'governor slots'), and freeing someone else's lease is a takeover,
by the rules of 'governor takeover': allowed when its owner is proven dead on this
host, refused (exit 73, naming the owner) while it may be alive unless --force.
It is recorded as a takeover by your session ('governor events'), and the holder's
next renewal reports who took it. (Leases granted by a governor from before
secrets have no secret and are released by their id.) Without an argument the
handle is read from $GOVERNOR_LEASE, which keeps the secret out of ps.

Exit codes: 0 released; 73 refused (another's lease whose owner may be alive:
use --force); 122 the lease was not held; 125 bad input or backend unreachable.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			arg, err := a.leaseArg(args)
			if err != nil {
				return err
			}
			h, err := parseHandle(arg)
			if err != nil {
				return err
			}
			g, h, err := a.openLease(cmd.Context(), arg, openOptions{PID: holderPID(pid), Command: "governor release " + public(h)})
			if err != nil {
				return err
			}
			defer g.Close()
			err = a.releaseHandle(cmd.Context(), g, h, force, cmd.ErrOrStderr())
			switch {
			case errors.Is(err, governor.ErrNotHeld):
				return exitWith(exitcode.LeaseLost, fmt.Errorf("lease %s was not held (expired, released or taken over)", public(h)))
			case errors.Is(err, governor.ErrOwnerAlive):
				return exitWith(exitcode.Busy, fmt.Errorf("%w\n(the handle %s has no secret, so it does not prove that the lease is yours: releasing another's lease is a takeover)", err, public(h)))
			case err != nil:
				return exitWith(exitcode.Failure, err)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&force, "force", false, "free the lease even though the handle has no secret and its owner may be alive (a takeover: recorded, and the owner loses the lease at its next renewal)")
	f.IntVar(&pid, "pid", 0, "with a handle without secret, declare this process (e.g. $$) as the taker in the takeover event (default: none)")
	return cmd
}

// lostWhy says why a lease is lost, for renew and touch.
func lostWhy(err error) string {
	var ended *governor.LeaseLostError
	if errors.As(err, &ended) {
		return ended.Reason()
	}
	return "expired, released or taken over"
}

func (a *app) touchCmd() *cobra.Command {
	var token tokenFlag
	cmd := &cobra.Command{
		Use:   "touch [RESOURCE@LEASE_ID.SECRET...]",
		Short: "Mark progress on leases: those of the enclosing 'governor run', or those named",
		Example: `  governor run --resource heavy --progress-timeout 5m -- sh -c 'step1; governor touch; step2'
  governor touch "$lease"`,
		Long: `touch marks progress on leases, for holders that are alive but may get stuck:
a lease taken with --progress-timeout D ('governor run', 'governor acquire') is
lost once no mark came for D (see 'governor run --help'). The mark is stored in
the backend beside the lease ('governor slots' shows it), so any process may set
it.

Without arguments it marks every lease in GOVERNOR_HELD: the leases of the
'governor run' (and its ancestors) that this command runs under, so a command
calls plain 'governor touch' at each step of its work. It uses the same
configuration as the run: the same exec-defaults.yaml and GOVERNOR_* environment
(flags given to 'governor run' are not passed down). With arguments it marks the
leases named, by their whole handles as 'governor acquire' printed them
(RESOURCE@LEASE_ID.SECRET: the lease id alone is public), where 'governor renew'
marks progress too.

--token N (else $GOVERNOR_TOKEN) is the fencing token of the one lease named,
as for 'governor renew'; leases in GOVERNOR_HELD carry theirs in the run's
GOVERNOR_TOKEN list. A plain $GOVERNOR_TOKEN is not used when several leases
are named.

Exit codes: 0 marked; 122 a lease is lost (expired, released, taken over, or no
mark came within its progress timeout): stop the work; the others named are
still marked; 125 no lease given and none in GOVERNOR_HELD, a handle without its
secret, --token with more than one lease or without one named, a --token or
$GOVERNOR_TOKEN that is no token, bad input, or backend unreachable.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			type target struct {
				project string
				h       governor.Handle
			}
			var ts []target
			for _, arg := range args {
				h, err := parseHandle(arg)
				if err != nil {
					return err
				}
				ts = append(ts, target{"", h})
			}
			if token != 0 && len(args) != 1 {
				return exitWith(exitcode.Failure, fmt.Errorf("--token %d names the token of one lease; give that lease's handle alone (%d given)", token, len(args)))
			}
			for i := range ts {
				var err error
				if ts[i].h.Token, err = a.leaseToken(token, ts[i].h, len(ts) == 1); err != nil {
					return err
				}
			}
			if len(args) == 0 {
				held, err := acquire.HeldFromEnv(a.env)
				if err != nil {
					return exitWith(exitcode.Failure, err)
				}
				if len(held) == 0 {
					return exitWith(exitcode.Failure, fmt.Errorf("no lease to mark: give %s, or run touch under 'governor run' (%s is empty)", governor.HandleForm, acquire.EnvHeld))
				}
				for _, h := range held {
					ts = append(ts, target{h.Key.Project, h.Handle()})
				}
			}
			opened := map[string]*governor.Governor{}
			defer func() {
				for _, g := range opened {
					g.Close()
				}
			}()
			var lost error
			for _, t := range ts {
				g := opened[t.project]
				if g == nil {
					var err error
					if g, err = a.open(cmd.Context(), openOptions{Project: t.project}); err != nil {
						return err
					}
					opened[t.project] = g
				}
				err := g.TouchHandle(cmd.Context(), t.h)
				switch {
				case errors.Is(err, governor.ErrNotOwner):
					return notOwner(public(t.h), err)
				case errors.Is(err, governor.ErrLeaseLost):
					if lost == nil {
						lost = fmt.Errorf("lease %s is lost (%s); stop the work it protected", public(t.h), lostWhy(err))
					}
				case err != nil:
					return exitWith(exitcode.Failure, err)
				}
			}
			if lost != nil {
				return exitWith(exitcode.LeaseLost, lost)
			}
			return nil
		},
	}
	cmd.Flags().Var(&token, "token", "the fencing token of the one lease named, as acquire printed it (default $GOVERNOR_TOKEN; see 'governor renew --help')")
	return cmd
}

// limitGiven refuses --limit 0 given on the command line: 0 is the
// flag's "not given", never a limit, and taking it for one would be a
// silent default.
func limitGiven(cmd *cobra.Command, limit int) error {
	if limit == 0 && cmd.Flags().Changed("limit") {
		return exitWith(exitcode.Failure, fmt.Errorf("--limit 0; allowed: 1 to %d", governor.MaxLimit))
	}
	return nil
}
