package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/governor-dev/governor/internal/exitcode"
	"github.com/governor-dev/governor/internal/runner"
	"github.com/governor-dev/governor/internal/supervise"
)

// watchdogFD is the descriptor on which `governor run --watchdog` gets its
// pipe (the first of exec.Cmd.ExtraFiles).
const watchdogFD = 3

// watchdogArgs follow runner.SelfExecutable in the command line of a
// run's watchdog, then the run id.
var watchdogArgs = []string{"run", "--watchdog"}

// watchdogMain runs `governor run --watchdog ID` (runner.Watchdog) when
// args are a watchdog's, and reports whether they were. Main asks it
// before building any command: a watchdog starts with every run and uses
// none of them.
func (a *app) watchdogMain(args []string) (int, bool) {
	if len(args) < len(watchdogArgs) || args[0] != watchdogArgs[0] || args[1] != watchdogArgs[1] {
		return 0, false
	}
	if len(args) != len(watchdogArgs)+1 {
		a.report(exitcode.Failure, errors.New("--watchdog takes the run id, and is for governor's own use"))
		return exitcode.Failure, true
	}
	return runner.Watchdog(args[len(watchdogArgs)], os.NewFile(watchdogFD, "watchdog-pipe"), a.stderr), true
}

func (a *app) runCmd() *cobra.Command {
	var o runner.Options
	cmd := &cobra.Command{
		Use:   "run [flags] [--] CMD [ARGS...]",
		Short: "Run a command holding slots; its whole tree stops on timeout or lease loss",
		Long: `run takes slots of each --resource (in the fixed global order: lock_order, then
name), runs CMD with ARGS as given (no shell) while the leases heartbeat, and
releases the slots in reverse order once CMD and every process it started are
gone. Flags after CMD belong to CMD; "--" before CMD is optional.

Resources: --resource NAME[:WEIGHT] (repeatable) and --provider NAME (the
resource provider:NAME). A trailing :N is a weight only when what precedes it
is a configured resource or itself has a colon: heavy:2 and provider:x:2 take
2 slots, issue:2316 is one slot of resource issue:2316 (issue:2316:1 also);
after a configured name only a weight may follow (heavy:abc is refused).
Limits come from exec-defaults.yaml; --limit N gives the limit of every
resource the configuration does not have. A resource with neither takes the
limit last given to it (a --limit before, 'governor limit'), else 1: a mutex.
A live limit ('governor limit') wins over all of them (docs/configuration.md,
"Which limit applies").

Exec runs: with no --resource and no --provider, run is one exec run of the
project. It takes the project's run lock (resource "run", limit 1) and every
join slot (resource "run:join", limit run.max_concurrent_runs - 1; the
default of run.max_concurrent_runs is 4), so it is busy while any other run,
joined or not, is running. Concurrency is opt-in: --shareable takes the run
lock only and so accepts joiners; --join takes one join slot only, without
the run lock, and so runs beside a shareable run (or beside other joiners),
never beside a plain run. With run.max_concurrent_runs 1 there are no join
slots and --join is refused (125). --if-busy applies as for any resource:
--join --if-busy skip on a full set of join slots exits 75. --shareable and
--join may be given with --resource and --provider; they then add their run
resources to those. An exec run inside an exec run (an ancestor holds run or
run:join) is part of it and takes neither. 'governor slots' shows run and
run:join with their use.

Queue policies (docs/queue-policies.md): a resource whose config has
priorities, reserve, cap, fair_weights, fair_cap, max_queue or max_wait serves
its queue by them; --priority CLASS and --fair-key KEY say where this run
queues. A full queue (max_queue) refuses at once, exit 73 naming the bound;
a waiter queued for max_wait is dropped, exit 73 saying so.

Supersede (GitHub Actions' concurrency groups): with --supersede KEY, a newer
run with the same KEY on a resource replaces this one while it waits: this one
exits 76. With --cancel-in-progress too (and --if-busy wait), the newer run also
cancels the lease of a running one with KEY, which stops its command as on
lease loss (exit 122) within a heartbeat and then releases; the newer run
waits in the queue meanwhile, so the two commands never overlap.

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

The with-heavy-lock slot: a resource bound to it in exec-defaults.yaml
(resources: {heavy: {limit: 1, mkdir_lock: DIR}}; $HEAVY_LOCK_DIR, when set,
overrides DIR) is taken as its lease and then, before any later resource, the
wrapper's slot: an atomic mkdir of DIR/slot.d, with pid (the watchdog's, which
outlives the command tree) and cmd written inside in the wrapper's form, so
that the old wrapper and governor exclude each other. The command sees
HEAVY_LOCK_HELD (the pid in slot.d), so a nested wrapper does not take it
again; with HEAVY_LOCK_HELD already non-empty, governor takes neither the lease
nor the slot, and does not wait. Release removes slot.d only while its pid file
still holds what governor wrote. A slot.d naming a pid that no longer exists is
reclaimed; one with no pid yet, a corrupt pid, or a pid governor may not signal
(EPERM) is held: fail 73, skip 75, or wait. The wrapper sends no notification,
so a waiting run looks again every 250ms; governor waiters queue FIFO on the
lease first, so only the first of them polls.

A holder that is alive but stuck: with --progress-timeout D the command must mark
progress at least every D, by running 'governor touch' (no argument: it marks
every lease in its GOVERNOR_HELD, so it works from any depth of the command's
tree, in the same configuration as this run: the same exec-defaults.yaml and
GOVERNOR_* environment). The mark is stored in the backend beside the lease,
and 'governor slots' shows it. Once no mark came for D, the backend refuses the
lease's renewals; governor sees it at its next heartbeat (at most lease.heartbeat
later), stops the tree as for any lost lease (exit 122, outcome lease_lost) and
only then releases the slot: nobody else is granted it while the stuck command
still runs (if governor itself is stuck too, the lease expires by its TTL, as
always). The grant counts as the first mark. It applies to the leases this run
acquires, not to those an ancestor holds (a nested run's resources).

The command sees:
  GOVERNOR_HELD     leases held by this run and its ancestors,
                    PROJECT/RESOURCE=LEASE_ID.SECRET,... (',' and '%' in RESOURCE
                    as %2C, %25); the SECRET proves the lease: do not show it to others
  GOVERNOR_TOKEN    their fencing tokens, PROJECT/RESOURCE=TOKEN,...
  GOVERNOR_SESSION  the declared session
  GOVERNOR_RUN_IDS  invocation ids of this run and its ancestors, innermost last
  GOVERNOR_SPEND    with --cost or --max-tokens: "RESERVATION.SECRET BUDGET...",
                    for 'governor settle' (its secret proves the reservation)
  HEAVY_LOCK_HELD   when this run made the with-heavy-lock slot: the pid in slot.d
A nested 'governor run' for a resource an ancestor holds (same project, lease
still listed, and its secret in GOVERNOR_HELD) does not acquire it again and never
releases it. Lease ids are public, so an entry without the secret (written by
hand, or by another user) proves nothing: the resource is acquired as usual.

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

Spend budgets (docs/budgets.md): --cost N (in the budgets' unit: 0.50, or
0.50USD to have the unit checked), or --max-tokens N [--input-tokens N] priced by
the price table (prices.PROVIDER/MODEL for --model, else prices.PROVIDER; one
--provider), reserves the estimate on every budget that applies, all or none:
those whose scope (providers, models, fair_keys, sessions) holds the run's
--provider, --model, --fair-key and session, and each --budget NAME. It is
reserved once the slots are held; a budget it does not fit in is busy as a slot
is: --if-busy fail exits 73 naming the budget, spent, reserved, limit and reset
time, skip exits 75, wait waits until others settle below their estimates or
the window resets (up to --wait-timeout). After the command, the estimate is
settled as spent, unless the command reported its actual cost first with
'governor settle --cost N' (GOVERNOR_SPEND tells it the reservation); a command
that never started settles at 0. The reservation stays open for an hour (with
--timeout: that plus five minutes); a run still going after that has its
estimate counted.

Provider rate limits: after a rate-limit signal for provider P (a 429 seen
by 'governor backoff P', by the Go library's Provider.Do, or by a run with
--backoff-exit-code N whose command exited N), P cools off fleet-wide on the
backend's clock: --provider P waits until the end (--if-busy fail: 73, saying
until when), and then the queue is served in order. --backoff-exit-code N
reports the command's exit code N as that signal for each --provider (the
default cool-off, with jitter); the run still exits N.

Who is coordinated: with the file backend (no Redis), the slots are those of
one state dir, by default your own (~/.local/state/governor), so run
coordinates your own processes only: another Unix user's runs do not see
them. For one slot per machine across users, every user points --dir (or
file.dir, GOVERNOR_DIR) at one shared dir, group-owned and setgid (as root:
install -d -m 2770 -g governor /var/lib/governor, and add the users to the
group). Across machines you need Redis.

Exit codes:
  CMD's own  the command ran (0: it succeeded); 128+N when signal N killed it
  73         not acquired: busy with --if-busy fail, or --wait-timeout passed,
             or the wait was cancelled ('governor cancel'; the message says who)
  75         skipped: busy with --if-busy skip
  76         superseded while waiting by a newer run with its --supersede key
  122        the lease was lost while running (taken over, expired, or no
             progress mark for --progress-timeout); the command was stopped
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
			if err := limitGiven(cmd, o.Limit); err != nil {
				return err
			}
			if o.BackoffExitCode == 0 && cmd.Flags().Changed("backoff-exit-code") {
				return exitWith(exitcode.Failure, errors.New("--backoff-exit-code 0 is not allowed; use 1 to 255, with --provider NAME (the provider the exit code signals for)"))
			}
			l, err := a.load()
			if err != nil {
				return err
			}
			o.Args, o.Config, o.Env = args, l, a.env
			o.Stdin, o.Stdout, o.Stderr = a.stdin, a.stdout, a.stderr
			o.Report, o.Warn = a.report, a.warn
			o.Watchdog = append([]string{runner.SelfExecutable()}, watchdogArgs...)
			return exitCode(runner.Run(cmd.Context(), o))
		},
	}
	f := cmd.Flags()
	f.SetInterspersed(false) // flags after CMD are CMD's
	f.StringArrayVar(&o.Resources, "resource", nil, "resource NAME[:WEIGHT] to hold (repeatable)")
	f.StringArrayVar(&o.Providers, "provider", nil, "provider NAME: the same as --resource provider:NAME (repeatable)")
	f.IntVar(&o.Limit, "limit", 0, "limit of the resources the configuration has no limit for (said on stderr when not applied; default: the limit last given, else 1: a mutex)")
	f.Int64Var(&o.Tokens, "tokens", 0, "tokens to reserve from each --provider's tokens_per_minute budget")
	f.Var(costFlag{&o.Spend.Cost}, "cost", "the command's upper-bound cost, in the budgets' unit (0.50 or 0.50USD): reserved on every spend budget that applies, settled after (docs/budgets.md)")
	f.StringVar(&o.Spend.Model, "model", "", "the model the command calls: for the budgets' models scope and the price table (prices.PROVIDER/MODEL)")
	f.Int64Var(&o.Spend.MaxTokens, "max-tokens", 0, "instead of --cost: price the call from the price table, as --input-tokens of input and this many of output")
	f.Int64Var(&o.Spend.InputTokens, "input-tokens", 0, "with --max-tokens: the call's input tokens")
	f.StringArrayVar(&o.Spend.Budgets, "budget", nil, "a spend budget to charge besides those whose scope holds the run (repeatable)")
	f.IntVar(&o.BackoffExitCode, "backoff-exit-code", 0, "the command exiting with this code (1-255) is a rate-limit signal: each --provider cools off fleet-wide (see 'governor backoff')")
	f.BoolVar(&o.Exclusive, "exclusive", false, "take the whole limit of every resource")
	f.BoolVar(&o.Shareable, "shareable", false, "hold the run lock and accept --join runs beside this one")
	f.BoolVar(&o.Join, "join", false, "take one join slot (run:join) instead of the run lock: run beside a --shareable run")
	f.StringVar(&o.IfBusy, "if-busy", "", "when a resource is full: fail (exit 73, the default), wait, or skip (exit 75)")
	f.DurationVar(&o.WaitTimeout, "wait-timeout", 0, "give up waiting after this long (exit 73); implies --if-busy wait")
	f.DurationVar(&o.Timeout, "timeout", 0, "stop the command tree after this long (exit 124)")
	f.DurationVar(&o.ProgressTimeout, "progress-timeout", 0, "lose the lease (stop the tree, exit 122) when no progress mark ('governor touch') comes for this long (default: none)")
	f.DurationVar(&o.KillGrace, "kill-grace", 0, fmt.Sprintf("time between TERM and KILL when stopping the tree (default %v)", supervise.DefaultKillGrace))
	f.StringVar(&o.Priority, "priority", "", "the priority class to queue in, on resources whose config has priorities (default: the class named default, else the lowest)")
	f.StringVar(&o.FairKey, "fair-key", "", "the fair key (tenant, agent, session) to queue under, on resources with fairness: keys take turns")
	f.StringVar(&o.Supersede, "supersede", "", "supersede key: a newer run with the same key replaces this one while it waits (exit 76)")
	f.BoolVar(&o.CancelInProgress, "cancel-in-progress", false, "with --supersede and --if-busy wait: also stop a running holder with the same key, as on lease loss (it exits 122), and run once it has ended; another OS user's only with --force")
	f.BoolVar(&o.CancelOthers, "force", false, "with --cancel-in-progress: stop a running holder of another OS user too (refused without it, exit 125)")
	f.StringVar(&o.Record, "record", "", "append a grant line and an end line per invocation to this JSONL file (schema above)")
	f.StringVar(&o.Session, "session", "", "session id declared to other holders (default $GOVERNOR_SESSION, else host:pid)")
	f.BoolVar(&a.quiet, "quiet", false, "print nothing when not acquired (busy, skipped, --wait-timeout passed): the exit code tells")
	return cmd
}

// exitCode turns a run's exit code into RunE's error.
func exitCode(code int) error {
	if code == exitcode.OK {
		return nil
	}
	return exitWith(code, nil)
}
