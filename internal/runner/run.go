package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/governor-dev/governor/config"
	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/humantime"
	"github.com/governor-dev/governor/governor/proc"
	"github.com/governor-dev/governor/governor/safetext"
	"github.com/governor-dev/governor/internal/acquire"
	"github.com/governor-dev/governor/internal/connect"
	"github.com/governor-dev/governor/internal/exitcode"
	"github.com/governor-dev/governor/internal/redact"
	"github.com/governor-dev/governor/internal/words"
)

// run is one invocation.
type run struct {
	o      Options
	env    []string
	stderr io.Writer
	id     string
	rec    Record
	recf   *os.File
	sigs   chan os.Signal

	plan    *acquire.Plan
	session string
	wd      *watchdog
	// wdStart delivers the watchdog, started beside the run's own
	// preparation (awaitWatchdog), until it is taken.
	wdStart chan watchdogStart
	g       *governor.Governor
	held    *acquire.Held     // once acquired
	leases  []*governor.Lease // acquired by this run, in acquisition order (held.Leases)
	// checkLock: the command got its own description of the lease's
	// file, to be checked before the release (awaitLeaseFile)
	checkLock map[*governor.Lease]bool
	waited    time.Duration

	// spend is the planned cost (nil: none), reserved under the run id
	// in spent once the slots are held; started says the command started
	// (a reservation of a command that never ran settles at 0).
	spend   *acquire.Spend
	spent   *governor.BudgetReservation
	started bool
}

// Run runs the command of o holding its slots, as `governor run` does (see
// the package documentation), and returns the exit code: the command's
// own, or one of the Exit constants. Every message, refusals included,
// goes to o.Stderr. When Run returns, the command's whole process tree is
// gone, every lease this invocation acquired is released, the Governor
// it opened is closed and the end record (if any) is written. Run
// catches INT, TERM, HUP and QUIT for its duration (signal.Notify).
func Run(ctx context.Context, o Options) int {
	if _, isFile := o.Stderr.(*os.File); o.Stderr != nil && !isFile {
		// The command's output is copied to it by another goroutine while
		// Run writes its own messages.
		lw := &lockedWriter{w: o.Stderr}
		if sameWriter(o.Stdout, o.Stderr) {
			o.Stdout = lw
		}
		o.Stderr = lw
	}
	r := &run{o: o, env: o.Env, stderr: o.Stderr, sigs: make(chan os.Signal, 8), checkLock: map[*governor.Lease]bool{}}
	if r.env == nil {
		r.env = os.Environ()
	}
	r.o.Env = r.env
	if r.stderr == nil {
		r.stderr = os.Stderr
	}
	r.id = newID()
	host, _ := os.Hostname()
	r.rec = Record{ID: r.id, Host: host, PID: os.Getpid(), Start: time.Now()}
	if ids := strings.Fields(getenv(r.env, EnvRunIDs)); len(ids) > 0 {
		r.rec.OuterRun = ids[len(ids)-1]
	}
	if len(o.Args) > 0 {
		r.rec.Command = redact.Args(o.Args)
	}
	if len(o.Watchdog) > 0 {
		// exec.Cmd.Start waits for the watchdog's execve: meanwhile the
		// run reads its plan and its record file.
		r.wdStart = make(chan watchdogStart, 1)
		go func() {
			wd, err := startWatchdog(o.Watchdog, r.id, r.env, r.stderr)
			r.wdStart <- watchdogStart{wd, err}
		}()
	}
	return r.run(ctx)
}

type watchdogStart struct {
	wd  *watchdog
	err error
}

// awaitWatchdog waits for the watchdog Run started, if any and not
// awaited yet, and sets r.wd: the watchdog exists before anything is
// acquired, its pid declared as the holder's.
func (r *run) awaitWatchdog() error {
	if r.wdStart == nil {
		return nil
	}
	s := <-r.wdStart
	r.wdStart, r.wd = nil, s.wd
	return s.err
}

func (r *run) run(ctx context.Context) int {
	if r.o.Record != "" {
		f, err := openRecord(r.o.Record)
		if err != nil {
			return r.fail(ExitFailure, err)
		}
		r.recf = f
	}
	p, err := plan(&r.o)
	if err != nil {
		return r.fail(ExitFailure, err)
	}
	r.plan = p
	if commandMissing(r.o.Args[0], r.env) {
		return r.finish(ExitNotFound, OutcomeError, fmt.Errorf("%s: command not found", r.o.Args[0]))
	}

	signal.Notify(r.sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(r.sigs)

	// The default session names governor, not the watchdog declared as
	// the holder's pid.
	r.session = connect.Session(r.o.Session, r.env)
	if r.session == "" {
		r.session = fmt.Sprintf("%s:%d", r.rec.Host, r.rec.PID)
	}
	if r.spend, err = acquire.PlanSpend(r.o.Config.Config, r.o.Spend, config.SpendScope{Providers: r.o.Providers,
		Model: r.o.Spend.Model, FairKey: r.o.FairKey, Session: r.session}); err != nil {
		return r.fail(ExitFailure, err)
	}
	if r.spend != nil && len(r.spend.Budgets) == 0 {
		fmt.Fprintf(r.stderr, "governor: no spend budget applies to this run (see 'governor budgets'): its cost is not reserved\n")
	}
	if err := r.awaitWatchdog(); err != nil {
		return r.fail(ExitFailure, err)
	}

	if code, outcome, err := r.acquire(ctx); code >= 0 {
		return r.finish(code, outcome, err)
	}
	if err := r.endOrphans(ctx); err != nil {
		return r.finish(ExitFailure, OutcomeError, err)
	}
	r.rec.Granted = time.Now()
	r.writeRecord(KindGrant)
	code, outcome, err := r.execute()
	if outcome == OutcomeRan {
		r.report(ctx, code)
	}
	return r.finish(code, outcome, err)
}

// report tells each --provider how the command ended (Provider.Report):
// the exit code BackoffExitCode is a rate-limit signal, a fleet-wide
// cool-off of the default length (said on stderr); 0 is a success (for
// adaptive concurrency). A failure to record it is said too; the run's
// exit code stays the command's.
func (r *run) report(ctx context.Context, code int) {
	var outcome error
	switch {
	case r.o.BackoffExitCode > 0 && code == r.o.BackoffExitCode:
		outcome = governor.RateLimited{Reason: fmt.Sprintf("the command exited %d (--backoff-exit-code)", code)}
	case code != 0:
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), governor.DefaultReleaseTimeout)
	defer cancel()
	for _, p := range r.o.Providers {
		def, _ := r.o.Config.Catalog().Provider(p)
		end, err := r.g.Provider(p, def.Limits).Report(ctx, outcome)
		switch {
		case err != nil:
			fmt.Fprintf(r.stderr, "governor: provider %s: %s\n", p, safetext.Escape(err.Error()))
		case outcome != nil:
			fmt.Fprintf(r.stderr, "governor: provider %s: the command exited %d (--backoff-exit-code): %s\n", p, code,
				humantime.CoolOffNote(end, time.Until(end)))
		}
	}
}

// fail ends a run that has acquired nothing and started nothing.
func (r *run) fail(code int, err error) int {
	return r.finish(code, OutcomeError, err)
}

// acquire opens the Governor, finds what ancestors hold and takes the
// rest. It returns code -1 when everything is held, and otherwise the
// exit code, outcome and message of a run that must end.
func (r *run) acquire(ctx context.Context) (int, Outcome, error) {
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		code    int
		outcome Outcome
		err     error
	}
	done := make(chan result, 1)
	go func() {
		code, outcome, err := r.openAndAcquire(actx)
		done <- result{code, outcome, err}
	}()
	select {
	case res := <-done:
		return res.code, res.outcome, res.err
	case sig := <-r.sigs:
		cancel()
		<-done         // the acquire withdraws its waiter and releases partial grants
		r.releaseAll() // what it got just before the signal
		n := int(sig.(syscall.Signal))
		return 128 + n, OutcomeInterrupted, fmt.Errorf("interrupted by %s while waiting for slots; nothing is held", signalName(sig))
	}
}

func (r *run) openAndAcquire(ctx context.Context) (int, Outcome, error) {
	oo := connect.Options{Session: r.session, Command: r.rec.Command, GovernorPID: os.Getpid(), Warn: r.o.Warn}
	if oo.Warn == nil {
		oo.Warn = func(msg string) { fmt.Fprintln(r.stderr, msg) }
	}
	if r.wd != nil {
		// The watchdog is declared for liveness; governor is shown as the
		// holder, with its command.
		oo.PID, oo.RunID = r.wd.pid(), r.id
		if cg, ok := proc.ChildCgroup(proc.RunCgroupName(r.id)); ok {
			oo.Cgroup = cg
		}
	}
	g, err := connect.Open(ctx, r.o.Config, r.env, oo)
	if err != nil {
		return ExitFailure, OutcomeError, err
	}
	r.g = g
	r.rec.Project, r.rec.Session = g.Project(), g.Session()

	var sl *statusLine // drawn only while the acquire waits
	if fd, ok := terminal(r.stderr); ok && r.plan.IfBusy() == acquire.IfBusyWait {
		sl = newStatusLine(r.stderr, func() int { return columns(fd) })
	}
	_, tty := terminal(r.stderr) // as the status line: only on a terminal (--quiet prints nothing)
	ev := acquire.Events{
		OnNote: func(msg string) { fmt.Fprintf(r.stderr, "governor: %s\n", msg) },
		OnQueued: func(name string, res governor.Result) {
			if sl != nil {
				sl.update(name, res, expectedWait(ctx, g, name, res.Position))
			}
		},
		OnMkdirWait: func(msg string) {
			if tty {
				fmt.Fprintf(r.stderr, "governor: %s\n", msg)
			}
		},
	}
	if r.wd != nil {
		r.plan.SetHolder(r.wd.pid(), r.rec.Command)
	} else {
		r.plan.SetHolder(0, r.rec.Command)
	}
	if err := r.plan.SetSpend(r.spend, r.id, r.spendWithin()); err != nil {
		return ExitFailure, OutcomeError, err
	}
	held, err := r.plan.Acquire(ctx, g, ev)
	r.waited = r.plan.Waited()
	if sl != nil {
		sl.close()
	}
	if err != nil {
		code := exitcode.For(err)
		return code, OutcomeOf(code), err
	}
	r.held, r.leases, r.spent = held, held.Leases(), held.Spend()
	return -1, "", nil
}

// spendWithin is how long the run's command may run, which its
// reservation stays open past when it rides on no lease (its first
// lease names it otherwise: governor.Ask.BudgetUnderLease, Within):
// --timeout and its kill grace, 0 (not known) without --timeout.
func (r *run) spendWithin() time.Duration {
	if r.o.Timeout <= 0 {
		return 0
	}
	return r.o.Timeout + r.o.KillGrace
}

// settle settles the run's reservation, if any: at its estimate once the
// command started (unless the command settled its actual cost first with
// 'governor settle', which makes this one change nothing), at 0 when it
// never did.
func (r *run) settle() {
	if r.spent == nil {
		return
	}
	var actual []governor.BudgetAmount
	if !r.started {
		for _, n := range r.spend.Names() {
			actual = append(actual, governor.BudgetAmount{Name: n})
		}
	}
	report := func(_ governor.BudgetSettlement, err error) {
		if err != nil {
			fmt.Fprintf(r.stderr, "governor: settling the run's cost: %s (its estimate stays counted)\n", safetext.Escape(err.Error()))
		}
	}
	if r.held != nil {
		// Sent with the release of the run's slot (releaseAll): no
		// round trip of its own.
		r.held.SettleOnRelease(r.spent, actual, report)
	} else {
		report(r.spent.SettleEach(context.Background(), actual))
	}
	r.spent = nil
}

// releaseAll releases what this run acquired (acquire.Held.ReleaseWith),
// each lease once its file is no longer held by an escaped process
// (awaitLeaseFile: else it stays held), and returns the resources whose
// lease had been lost.
func (r *run) releaseAll() (lost []string) {
	if r.held == nil {
		return nil
	}
	var re *acquire.ReleaseError
	if err := r.held.ReleaseWith(context.Background(), r.awaitLeaseFile); errors.As(err, &re) {
		for _, err := range re.Failed {
			fmt.Fprintf(r.stderr, "governor: %v\n", err)
		}
		return re.Lost
	}
	return nil
}

// finish releases, lets the watchdog go, closes the Governor, writes the
// end record and returns code. err, if set, is reported first (Options.Report,
// else words.WriteReport on Stderr).
func (r *run) finish(code int, outcome Outcome, err error) int {
	r.settle()
	if lost := r.releaseAll(); len(lost) > 0 && outcome == OutcomeRan {
		lostErr := fmt.Errorf("the lease on %s was lost before the command ended (exit %d); its work may have overlapped another holder's",
			strings.Join(lost, ", "), code)
		err = errors.Join(err, lostErr)
		code, outcome = ExitLeaseLost, OutcomeLeaseLost
	}
	if r.o.Report != nil {
		r.o.Report(code, err)
	} else {
		words.WriteReport(r.stderr, err)
	}
	_ = r.awaitWatchdog() // a run that ended before it needed one: its start error no longer matters
	if r.wd != nil {
		r.wd.finish()
	}
	if r.g != nil {
		if err := r.g.Close(); err != nil {
			fmt.Fprintf(r.stderr, "governor: closing the backend: %v\n", err)
		}
	}
	if r.recf != nil {
		r.rec.Outcome, r.rec.ExitCode, r.rec.End = outcome, code, time.Now()
		r.writeRecord(KindEnd)
		r.recf.Close()
	}
	return code
}

// writeRecord appends a record of kind to the --record file, if any: what
// the run holds and has waited so far.
func (r *run) writeRecord(kind RecordKind) {
	if r.recf == nil {
		return
	}
	rec := r.rec
	rec.Kind = kind
	rec.WaitSeconds = r.waited.Seconds()
	var items []*acquire.Item
	if r.plan != nil {
		items = r.plan.Items()
	}
	rec.Resources, rec.Nested = acquire.RecordOf(items)
	rec.Start, rec.Granted, rec.End = rec.Start.UTC(), rec.Granted.UTC(), rec.End.UTC()
	if err := appendRecord(r.recf, rec); err != nil {
		fmt.Fprintf(r.stderr, "governor: --record %s: %v\n", r.o.Record, err)
	}
}
