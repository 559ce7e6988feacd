package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/governor-dev/governor/config"
	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/runner"
	"github.com/governor-dev/governor/governor/supervise"
)

// watchdogFD is the descriptor on which `governor run --watchdog` gets its
// pipe (the first of exec.Cmd.ExtraFiles).
const watchdogFD = 3

func (a *app) runCmd() *cobra.Command {
	var (
		o        runner.Options
		watchdog bool
	)
	cmd := &cobra.Command{
		Use:   "run [flags] [--] CMD [ARGS...]",
		Short: "Run a command holding slots: wait or refuse when busy, stop the whole tree on timeout or lease loss",
		Long: `run takes slots of each --resource (in the fixed global order: lock_order, then
name), runs CMD with ARGS as given (no shell) while the leases heartbeat, and
releases the slots in reverse order once CMD and every process it started are
gone. Flags after CMD belong to CMD; "--" before CMD is optional.

Resources: --resource NAME[:WEIGHT] (repeatable) and --provider NAME (the
resource provider:NAME). A trailing :N is a weight only when what precedes it
is a configured resource or itself has a colon: heavy:2 and provider:x:2 take
2 slots, issue:2316 is one slot of resource issue:2316 (issue:2316:1 also).
Limits come from exec-defaults.yaml; --limit N gives the limit of every
resource the configuration does not have. With no --resource and no
--provider, run takes one slot of resource "run" (run.max_concurrent_runs),
and refuses to run when that is not configured.

When busy: --if-busy fail (default) exits 73, skip exits 75, both naming the
holders (session, host, pid, since, last heartbeat, expiry) and the
'governor takeover' command; wait queues in FIFO order, up to --wait-timeout
(73 after it; --wait-timeout alone implies wait). While waiting, a status line
on stderr shows the place in the queue and the holder, if stderr is a
terminal.

The command runs in its own process group. Run from an interactive terminal
(governor in its foreground), the command's group is given the terminal while
it runs, so it can read from it and Ctrl-C reaches it directly; governor takes
the terminal back afterwards. Job control works through it: Ctrl-Z stops the
command and then governor (the shell gets its prompt back), and fg or bg
continues both; the leases are not renewed while governor is stopped, so a
stop longer than the TTL ends in exit 122. INT, TERM, HUP and QUIT sent to
governor are forwarded to the whole tree; a second INT kills it. --timeout, a
lost lease, or the command's leader exiting with descendants left behind stop
the tree: TERM (and CONT), then KILL after --kill-grace, setsid'd descendants
included. If governor itself is killed, even with SIGKILL, the tree does not
outlive it: the direct child gets SIGKILL (parent-death signal), and a
watchdog process (governor run --watchdog, started before acquiring, declared
as the pid whose death frees the slots; 'governor slots' shows governor's pid
and the command's beside it) kills the run's cgroup and every process carrying the run
id in GOVERNOR_RUN_IDS; with the file backend the tree also inherits the lease
files (descriptors 3...), so the slot stays held until its last process is
dead and is free at once after. Where a cgroup v2 group can be made (as root,
or in a delegated group), the command is born in its own, governor-run-ID:
nothing of the tree can leave it, the slots are released only once it is
empty, and KILL reaches all of it at once.

The command sees:
  GOVERNOR_HELD     leases held by this run and its ancestors,
                    PROJECT/RESOURCE=LEASE_ID,... (',' and '%' in RESOURCE as %2C, %25)
  GOVERNOR_TOKEN    their fencing tokens, PROJECT/RESOURCE=TOKEN,...
  GOVERNOR_SESSION  the declared session
  GOVERNOR_RUN_IDS  invocation ids of this run and its ancestors, innermost last
A nested 'governor run' for a resource an ancestor holds (same project, lease
still listed) does not acquire it again and never releases it.

--record FILE.jsonl appends two JSON lines per invocation, each in one write(2)
on an O_APPEND descriptor; earlier lines are never rewritten. {"kind":"grant"}
once every slot is in hand, before CMD starts, so the wait stays on file even
if governor is then killed with SIGKILL; {"kind":"end"} after everything is
released, repeating the grant's fields and adding outcome (ran, skipped, busy,
timeout, lease_lost, interrupted, error), exit_code and end. A run refused or
failed before its grant writes only the end line; a grant without an end is a
run that is still running or was killed. Fields: kind, id, project, session,
host, pid, command (secrets redacted), resources (name, weight, limit, nested,
lease, token), nested (every resource was held by an ancestor), outer_run (id
of the governor run this one runs inside, the last of its GOVERNOR_RUN_IDS;
absent at top level), wait_seconds (this invocation's own wait, monotonic; 0
when nested), start, granted, end. Lines without "kind" (older governor) are
end lines. FILE must be a regular file or absent: a symlink, FIFO, device or
directory is refused (125); a new FILE is created 0600.

Exit codes:
  CMD's own  the command ran (0: it succeeded); 128+N when signal N killed it
  73         not acquired: busy with --if-busy fail, or --wait-timeout passed
  75         skipped: busy with --if-busy skip
  122        the lease was lost while running; the command was stopped
  124        --timeout passed; the command tree was stopped
  125        governor's own failure: bad flags, bad config, backend unreachable
  126        the command cannot be executed
  127        the command was not found
  128+N      governor got signal N while waiting; nothing is held`,
		Example: `  governor run --resource heavy -- python eval.py
  governor run --provider anthropic --if-busy wait --wait-timeout 10m -- ./agent.sh
  governor run --resource issue:2316 --limit 1 --if-busy skip -- ./fix-issue.sh 2316`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if watchdog {
				if len(args) != 1 {
					return exitWith(ExitFailure, fmt.Errorf("--watchdog takes the run id, and is for governor's own use"))
				}
				return exitCode(runner.Watchdog(args[0], os.NewFile(watchdogFD, "watchdog-pipe"), cmd.ErrOrStderr()))
			}
			l, err := a.load()
			if err != nil {
				return err
			}
			o.Args = args
			o.Limits, o.LimitOrigins = l.Config.Limits(), l.LimitOrigins()
			o.Rates = providerRates(l.Config)
			if o.Tokens < 0 {
				return exitWith(ExitFailure, fmt.Errorf("--tokens %d; allowed: 0 or more", o.Tokens))
			}
			o.Env = a.env
			o.Stdin, o.Stdout, o.Stderr = a.stdin, a.stdout, a.stderr
			o.Report = a.report
			o.Watchdog = []string{runner.SelfExecutable(), "run", "--watchdog"}
			o.Open = func(ctx context.Context, oo runner.OpenOptions) (*governor.Governor, error) {
				// The watchdog (oo.PID) is declared for liveness; governor
				// is shown as the holder, with its command.
				return a.open(ctx, openOptions{Session: oo.Session, Command: oo.Command, PID: oo.PID, GovernorPID: os.Getpid(),
					Cgroup: oo.Cgroup, RunID: oo.RunID})
			}
			return exitCode(runner.Run(cmd.Context(), o))
		},
	}
	f := cmd.Flags()
	f.SetInterspersed(false) // flags after CMD are CMD's
	f.StringArrayVar(&o.Resources, "resource", nil, "resource NAME[:WEIGHT] to hold (repeatable)")
	f.StringArrayVar(&o.Providers, "provider", nil, "provider NAME: the same as --resource provider:NAME (repeatable)")
	f.IntVar(&o.Limit, "limit", 0, "limit of the resources the configuration has no limit for (said on stderr when not applied)")
	f.Int64Var(&o.Tokens, "tokens", 0, "tokens to reserve from each --provider's tokens_per_minute budget")
	f.BoolVar(&o.Exclusive, "exclusive", false, "take the whole limit of every resource")
	f.StringVar(&o.IfBusy, "if-busy", "", "when a resource is full: fail (exit 73, the default), wait, or skip (exit 75)")
	f.DurationVar(&o.WaitTimeout, "wait-timeout", 0, "give up waiting after this long (exit 73); implies --if-busy wait")
	f.DurationVar(&o.Timeout, "timeout", 0, "stop the command tree after this long (exit 124)")
	f.DurationVar(&o.KillGrace, "kill-grace", 0, fmt.Sprintf("time between TERM and KILL when stopping the tree (default %v)", supervise.DefaultKillGrace))
	f.StringVar(&o.Record, "record", "", "append a grant line and an end line per invocation to this JSONL file (schema above)")
	f.StringVar(&o.Session, "session", "", "session id declared to other holders (default $GOVERNOR_SESSION, else host:pid)")
	f.BoolVar(&a.quiet, "quiet", false, "print nothing when not acquired (busy, skipped, --wait-timeout passed): the exit code tells")
	f.BoolVar(&watchdog, "watchdog", false, "internal: the watchdog of a run")
	_ = f.MarkHidden("watchdog")
	return cmd
}

// exitCode turns a run's exit code into RunE's error.
func exitCode(code int) error {
	if code == ExitOK {
		return nil
	}
	return exitWith(code, nil)
}

// providerRates maps providers.<name>.requests_per_minute,
// tokens_per_minute and burst (of requests) to rate limits.
func providerRates(c config.Config) map[string]runner.ProviderRate {
	rates := map[string]runner.ProviderRate{}
	for name, p := range c.Providers {
		rates[name] = runner.ProviderRate{
			Requests: governor.RateLimit{Rate: int64(p.RequestsPerMinute), Period: time.Minute, Burst: int64(p.Burst)},
			Tokens:   governor.RateLimit{Rate: int64(p.TokensPerMinute), Period: time.Minute},
		}
	}
	return rates
}
