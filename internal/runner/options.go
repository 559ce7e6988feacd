package runner

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/governor-dev/governor/config"
	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/acquire"
	"github.com/governor-dev/governor/internal/connect"
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
	EnvHeld    = acquire.EnvHeld
	EnvToken   = acquire.EnvToken
	EnvSession = connect.EnvSession
	EnvRunIDs  = governor.EnvRunIDs
)

// The exec-run resources: acquire's (see acquire.DefaultResource).
const (
	DefaultResource = acquire.DefaultResource
	JoinResource    = acquire.JoinResource
)

// Options describe one run. The zero value of every field but Args and
// Config means the documented default.
type Options struct {
	// Args is the command, executed as given (no shell).
	Args []string

	// Config is the configuration: the backend Run connects to
	// (connect.Open) and the catalog its Request is planned against.
	Config *config.Loaded

	// Request is what the run holds (--resource, --provider, --limit,
	// --if-busy, ...), planned and acquired by package acquire; with
	// neither resource nor provider, the plain exec run. Run sets its Env,
	// ExecRun, HolderPID and Command.
	acquire.Request

	// BackoffExitCode, when not 0, makes the command exiting with it a
	// rate-limit signal for each of Providers (--backoff-exit-code): a
	// fleet-wide cool-off of the default length (governor.CoolOff). The
	// run still exits with the command's code.
	BackoffExitCode int

	// Spend is what the command may cost (--cost, --max-tokens, --budget,
	// --model): its estimate is reserved on the budgets that apply once
	// the slots are held, and settled after the command (docs/budgets.md).
	Spend acquire.SpendRequest

	// Timeout stops the command tree after this long (0: never);
	// KillGrace is the time between TERM and KILL (0: supervise's
	// default, 5s).
	Timeout   time.Duration
	KillGrace time.Duration

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
	// Stderr with words.WriteReport. Not getting the slots is an
	// *acquire.NotAcquiredError. The cause of stopping the tree
	// (--timeout, a lost lease) then comes at the end too, not as the
	// stop begins.
	Report func(code int, err error)

	// Warn is told the backend's warnings (nil: written on Stderr).
	Warn func(string)

	// Watchdog is the command line of the watchdog program, a program
	// that calls Watchdog with the run id Run appends as the last
	// argument and the pipe it passes as descriptor 3. The CLI uses
	// {SelfExecutable(), "run", "--watchdog"}. Nil runs without one: then
	// descendants of the command that left its process group can outlive
	// a governor killed with SIGKILL.
	Watchdog []string
}

// plan validates o (what only a run has: a command, --timeout,
// --kill-grace, --backoff-exit-code) and plans its Request
// (acquire.NewPlan). Its errors name the bad value and what is allowed.
func plan(o *Options) (*acquire.Plan, error) {
	if len(o.Args) == 0 {
		return nil, fmt.Errorf("no command: usage is governor run [flags] -- CMD [ARGS...]")
	}
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
	if o.Config == nil {
		return nil, errors.New("runner: Options.Config is nil")
	}
	req := o.Request
	req.ExecRun = len(req.Resources) == 0 && len(req.Providers) == 0
	req.Detached = false
	req.Env = o.Env
	return acquire.NewPlan(o.Config.Catalog(), req)
}
