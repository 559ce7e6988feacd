package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/governor-dev/governor/config"
	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/exitcode"
)

// Exit codes of Run besides the command's own (SPEC §4): package
// exitcode's.
const (
	ExitOK         = exitcode.OK
	ExitBusy       = exitcode.Busy
	ExitSkipped    = exitcode.Skipped
	ExitSuperseded = exitcode.Superseded
	ExitLeaseLost  = exitcode.LeaseLost
	ExitTimeout    = exitcode.Timeout
	ExitFailure    = exitcode.Failure
	ExitCannotExec = exitcode.CannotExec
	ExitNotFound   = exitcode.NotFound
)

// Environment variables that Run reads and sets for the command.
const (
	EnvHeld    = "GOVERNOR_HELD"
	EnvToken   = "GOVERNOR_TOKEN"
	EnvSession = "GOVERNOR_SESSION"
	EnvRunIDs  = governor.EnvRunIDs
)

// The resources of exec runs (run.max_concurrent_runs). DefaultResource
// is the project's run lock (limit 1); JoinResource holds the join slots
// (limit max_concurrent_runs-1).
//
// The rule, decided in plan alone: a plain run (no --resource, no
// --provider, neither --shareable nor --join) takes DefaultResource and
// the whole limit of JoinResource; --shareable takes DefaultResource
// only; --join takes one slot of JoinResource only. So two runs holding
// the lock never overlap, a plain run and a joiner never overlap (the
// plain run holds every join slot), and a shareable run and up to
// max_concurrent_runs-1 joiners do. Both resources are taken by one
// AcquireAll, in the fixed global order ("run" before "run:join": they
// share the prefix rank of lock_order, then sort by name), and each is a
// plain semaphore, so there is no moment at which a plain run holds the
// lock with a joiner still running: it holds the join slots or it does
// not run. A plain run that waits keeps its place in both FIFO queues:
// it waits holding the lock for the joiners to finish, and joiners that
// come after it queue behind it. An exec run inside an exec run takes
// none of the two (execRunInside).
const (
	DefaultResource = config.RunResource
	JoinResource    = config.RunJoinResource
)

// If-busy policies.
const (
	IfBusyFail = "fail"
	IfBusyWait = "wait"
	IfBusySkip = "skip"
)

// IfBusyPolicies are the values --if-busy allows.
var IfBusyPolicies = []string{IfBusyFail, IfBusyWait, IfBusySkip}

// Options describe one run. The zero value of every field but Args and
// Open means the documented default.
type Options struct {
	// Args is the command, executed as given (no shell).
	Args []string

	// Resources are --resource specs, NAME or NAME:WEIGHT (see
	// ParseResource); Providers are --provider names, each the resource
	// "provider:NAME". With neither, the run is a plain exec run: the run
	// lock and every join slot (see DefaultResource).
	Resources []string
	Providers []string
	// Limits are the configured limits by resource name, and
	// LimitOrigins where each was configured ("resources.heavy.limit in
	// FILE:LINE"), for the note that a --limit is not applied.
	Limits       map[string]int
	LimitOrigins map[string]string
	// Policies are the configured queue policies by resource name
	// (governor.Policy); Priority (--priority) and FairKey (--fair-key)
	// are this run's class and fair key on each resource that has one.
	Policies map[string]governor.Policy
	Priority string
	FairKey  string
	// Supersede (--supersede KEY) replaces an older waiting run with the
	// same key, which exits ExitSuperseded; with CancelInProgress
	// (--cancel-in-progress, Wait mode only) a running one with the key
	// is stopped as on lease loss (ExitLeaseLost), and this one runs once
	// it has released. See governor.AcquireOptions.Supersede.
	Supersede        string
	CancelInProgress bool
	// Rates are the configured rate limits by provider name: each
	// --provider with one takes one request (and Tokens tokens) of its
	// budget after its slot, before the command starts. When the budget
	// is spent, --if-busy applies as for a slot (wait: until it allows).
	Rates map[string]ProviderRate
	// Tokens is the token estimate to reserve from each provider's
	// tokens-per-minute budget (--tokens).
	Tokens int64
	// ProviderLimits are the configured limits by provider name, for
	// what a run reports after its command (Provider.Report): adaptive
	// concurrency counts its successes and halves on its signals.
	ProviderLimits map[string]governor.ProviderLimits
	// BackoffExitCode, when not 0, makes the command exiting with it a
	// rate-limit signal for each of Providers (--backoff-exit-code): a
	// fleet-wide cool-off of the default length (governor.CoolOff). The
	// run still exits with the command's code.
	BackoffExitCode int
	// Limit is the limit of every resource Limits does not have (--limit);
	// 0 means such a resource is an error.
	Limit int
	// Exclusive takes the whole limit of every resource.
	Exclusive bool

	// MkdirLocks binds resources to the mkdir slot of the with-heavy-lock
	// wrapper (package mkdirslot), by resource name: the directory holding
	// slot.d. Such a resource is taken as its lease and then the slot, in
	// the lock order; its command sees HEAVY_LOCK_HELD; when
	// HEAVY_LOCK_HELD is already set, an ancestor holds it (nested).
	MkdirLocks map[string]string

	// Shareable (--shareable) holds the run lock (DefaultResource) and
	// accepts joiners; Join (--join) takes one join slot (JoinResource)
	// instead of the lock. Either adds to Resources and Providers. See
	// DefaultResource for the rule.
	Shareable bool
	Join      bool

	// IfBusy is fail (the default), wait or skip. WaitTimeout bounds a
	// wait; given without IfBusy it implies wait (see ResolveIfBusy).
	IfBusy      string
	WaitTimeout time.Duration

	// Timeout stops the command tree after this long (0: never);
	// KillGrace is the time between TERM and KILL (0: supervise's
	// default, 5s).
	Timeout   time.Duration
	KillGrace time.Duration
	// ProgressTimeout makes every lease this run acquires lost (the tree
	// stopped, ExitLeaseLost) once no progress mark ('governor touch')
	// came for this long; see governor.AcquireOptions.ProgressTimeout.
	ProgressTimeout time.Duration

	// Record is a JSONL file to append this run's grant and end Records
	// to ("" none): a regular file or a path where one can be created.
	Record string

	// Session is declared as the holder's session; "" means
	// $GOVERNOR_SESSION from Env, else host:pid.
	Session string

	// Env is governor's environment, from which GOVERNOR_HELD and
	// GOVERNOR_SESSION are read and the command's is made; nil means
	// os.Environ().
	Env []string

	// Stdin, Stdout and Stderr are the command's streams (nil: the
	// process's own). Run's own messages go to Stderr too; the waiting
	// status line is drawn only when Stderr is a terminal.
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer

	// Report, when set, is given the error that ends the run (nil when
	// there is none) and the exit code, instead of Run writing it on
	// Stderr with WriteReport. Not getting the slots is a
	// *NotAcquiredError. The cause of stopping the tree (--timeout, a
	// lost lease) then comes at the end too, not as the stop begins.
	Report func(code int, err error)

	// Open opens the Governor once the watchdog runs. Run closes it.
	Open func(ctx context.Context, o OpenOptions) (*governor.Governor, error)

	// Watchdog is the command line of the watchdog program, a program
	// that calls Watchdog with the run id Run appends as the last
	// argument and the pipe it passes as descriptor 3. The CLI uses
	// {SelfExecutable(), "run", "--watchdog"}. Nil runs without one: then
	// descendants of the command that left its process group can outlive
	// a governor killed with SIGKILL.
	Watchdog []string
}

// ProviderRate is a provider's requests and tokens budget.
type ProviderRate struct {
	Requests governor.RateLimit
	Tokens   governor.RateLimit
	Shadow   bool // evaluated and counted, never enforced
}

func (p ProviderRate) limited() bool { return p.Requests.Rate > 0 || p.Tokens.Rate > 0 }

// OpenOptions are what Run needs of the Governor it opens: the session and
// command line to declare, the pid to declare as the holder (the
// watchdog's; 0 means governor's own), and, with it, what proves the
// command tree alive when governor and its watchdog are gone: its cgroup
// directory (empty without one) and the run id its processes carry
// (governor.Options.Cgroup and RunID).
type OpenOptions struct {
	Session string
	Command string
	PID     int
	Cgroup  string
	RunID   string
}

// ResolveIfBusy decides what --if-busy and --wait-timeout mean, for run
// and acquire alike: "" is fail, unless a wait timeout is given, which
// means waiting (a timeout for a wait the user did not ask for would be
// ignored silently otherwise); a wait timeout with fail or skip is
// refused. It returns IfBusyFail, IfBusyWait or IfBusySkip, or an error
// naming the bad value and what is allowed.
func ResolveIfBusy(ifBusy string, waitTimeout time.Duration) (string, error) {
	if ifBusy != "" && !slices.Contains(IfBusyPolicies, ifBusy) {
		return "", fmt.Errorf("--if-busy %q is not allowed; use fail, wait or skip", ifBusy)
	}
	if waitTimeout < 0 {
		return "", fmt.Errorf("--wait-timeout %v is not allowed; use a positive duration such as 30s", waitTimeout)
	}
	switch {
	case waitTimeout > 0 && ifBusy != "" && ifBusy != IfBusyWait:
		return "", fmt.Errorf("--wait-timeout %v with --if-busy %s: --wait-timeout bounds a wait; use --if-busy wait or drop one of them", waitTimeout, ifBusy)
	case waitTimeout > 0:
		return IfBusyWait, nil
	case ifBusy == "":
		return IfBusyFail, nil
	}
	return ifBusy, nil
}

// Resource is one resource of a run and the slots it takes.
type Resource struct {
	Name   string
	Weight int // 0: 1, or the whole limit with Exclusive
	// Every takes every slot: the whole limit in force when granted (a
	// plain exec run's join slots), decided by the backend as Exclusive.
	Every bool
}

// ParseResource reads a --resource spec: NAME, or NAME:WEIGHT. Resource
// names contain colons themselves (issue:2316, provider:anthropic), so a
// trailing :N is a weight only when what precedes it is a configured
// resource (limits has it) or itself contains a colon: heavy:2 and
// provider:anthropic:2 carry weight 2, issue:2316 is a name, and
// issue:2316:1 is that name with weight 1.
func ParseResource(spec string, limits map[string]int) (Resource, error) {
	r := Resource{Name: spec}
	if i := strings.LastIndexByte(spec, ':'); i > 0 && i < len(spec)-1 && allDigits(spec[i+1:]) {
		name := spec[:i]
		if _, ok := limits[name]; ok || strings.Contains(name, ":") {
			w, err := strconv.Atoi(spec[i+1:])
			if err != nil || w < 1 || w > governor.MaxLimit {
				return Resource{}, fmt.Errorf("--resource %q: weight %s; allowed: 1 to the resource's limit", truncate(spec, 64), truncate(spec[i+1:], 32))
			}
			r = Resource{Name: name, Weight: w}
		}
	}
	if err := governor.ValidateResource(r.Name); err != nil {
		return Resource{}, fmt.Errorf("--resource %q: %s", truncate(spec, 64), strings.TrimPrefix(err.Error(), governor.ErrInvalid.Error()+": "))
	}
	return r, nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// item is one resource of the plan: what to take and with which limit.
type item struct {
	name   string
	weight int // resolved: 1..limit
	limit  int
	nested bool // an ancestor run holds it
	// exclusive: weight is the limit, and the backend makes it the
	// limit in force at grant (governor.Request.Exclusive).
	exclusive bool
	held      HeldLease
	lease     *governor.Lease
}

// plan validates o, resolves o.IfBusy (ResolveIfBusy), and returns the
// resources to take, in the order given. Its errors name the bad value
// and what is allowed.
func plan(o *Options) ([]*item, error) {
	if len(o.Args) == 0 {
		return nil, fmt.Errorf("no command: usage is governor run [flags] -- CMD [ARGS...]")
	}
	ifBusy, err := ResolveIfBusy(o.IfBusy, o.WaitTimeout)
	if err != nil {
		return nil, err
	}
	o.IfBusy = ifBusy
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"--timeout", o.Timeout}, {"--kill-grace", o.KillGrace}} {
		if d.v < 0 {
			return nil, fmt.Errorf("%s %v is not allowed; use a positive duration such as 30s", d.flag, d.v)
		}
	}
	if o.BackoffExitCode != 0 && (o.BackoffExitCode < 1 || o.BackoffExitCode > 255 || len(o.Providers) == 0) {
		return nil, fmt.Errorf("--backoff-exit-code %d is not allowed; use 1 to 255, with --provider NAME (the provider the exit code signals for)", o.BackoffExitCode)
	}
	if o.Limit != 0 && governor.ValidateLimit("every resource", o.Limit) != nil {
		return nil, fmt.Errorf("--limit %d is not allowed; use 1 to %d", o.Limit, governor.MaxLimit)
	}

	var rs []Resource
	for _, spec := range o.Resources {
		r, err := ParseResource(spec, o.Limits)
		if err != nil {
			return nil, err
		}
		rs = append(rs, r)
	}
	for _, p := range o.Providers {
		if p == "" {
			return nil, fmt.Errorf("--provider \"\": give a provider name such as anthropic")
		}
		r, err := ParseResource(governor.ProviderResource(p), o.Limits)
		if err != nil {
			return nil, fmt.Errorf("--provider %q: %w", truncate(p, 64), err)
		}
		if _, ok := o.Limits[r.Name]; !ok && o.Limit == 0 && o.Rates[p].limited() {
			continue // rates only: no max_concurrency, so no slot to hold
		}
		rs = append(rs, r)
	}
	if len(rs) == 0 && len(o.Providers) > 0 && o.Rates != nil {
		return nil, nil // every provider is rates only
	}
	runs, err := execRun(o, len(rs) == 0)
	if err != nil {
		return nil, err
	}
	rs = append(rs, runs...)

	seen := map[string]bool{}
	var items []*item
	for _, r := range rs {
		if seen[r.Name] {
			return nil, fmt.Errorf("resource %s is given twice; give each resource once", r.Name)
		}
		seen[r.Name] = true
		limit, ok := o.Limits[r.Name]
		if !ok {
			limit = o.Limit
		}
		if limit == 0 {
			return nil, fmt.Errorf("resource %q has no limit: give --limit N, or configure it in exec-defaults.yaml (resources.%s.limit)", r.Name, r.Name)
		}
		w, err := governor.ResolveWeight(r.Name, r.Weight, limit, o.Exclusive)
		switch {
		case errors.Is(err, governor.ErrTooHeavy):
			return nil, fmt.Errorf("weight %d for %s is above its limit %d; allowed: 1 to %d (write %s:%d:1 if %q is the resource's name)",
				r.Weight, r.Name, limit, limit, r.Name, r.Weight, fmt.Sprintf("%s:%d", r.Name, r.Weight))
		case err != nil && o.Exclusive:
			return nil, fmt.Errorf("--exclusive with weight %d for %s: --exclusive takes the whole limit (%d); drop one of them", r.Weight, r.Name, limit)
		case err != nil:
			return nil, err
		}
		items = append(items, &item{name: r.Name, weight: w, limit: limit, exclusive: o.Exclusive || r.Every})
	}
	return items, nil
}

// execRun returns the run-lock resources of o (see DefaultResource):
// those of --shareable or --join, or, when plain (no other resource), the
// lock and every join slot.
func execRun(o *Options, plain bool) ([]Resource, error) {
	if _, ok := o.Limits[DefaultResource]; !ok && (plain || o.Shareable || o.Join) {
		return nil, fmt.Errorf("no resource to hold: give --resource NAME or --provider NAME, or configure run.max_concurrent_runs in exec-defaults.yaml for the run lock %q", DefaultResource)
	}
	joins, hasJoin := o.Limits[JoinResource]
	switch {
	case o.Shareable && o.Join:
		return nil, fmt.Errorf("--shareable with --join: a run either holds the run lock and accepts joiners (--shareable) or joins one (--join); drop one of them")
	case o.Join && !hasJoin:
		return nil, fmt.Errorf("--join: run.max_concurrent_runs is 1, so there are no join slots (run:join has max_concurrent_runs-1); raise run.max_concurrent_runs in exec-defaults.yaml, or drop --join")
	case o.Join:
		return []Resource{{Name: JoinResource}}, nil
	case o.Shareable:
		return []Resource{{Name: DefaultResource}}, nil
	case !plain:
		return nil, nil
	case hasJoin:
		return []Resource{{Name: DefaultResource}, {Name: JoinResource, Weight: joins, Every: true}}, nil
	}
	return []Resource{{Name: DefaultResource}}, nil
}

// truncate shortens s for messages: a bad value can be huge.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
