package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/proc"
	"github.com/governor-dev/governor/internal/exitcode"
	"github.com/governor-dev/governor/internal/redact"
	"github.com/governor-dev/governor/internal/supervise"

	"github.com/governor-dev/governor/internal/safetext"
)

// leaseFiler is implemented by backends that keep a lease proven alive by
// an open file (the file backend): the command inherits those files.
type leaseFiler interface {
	LeaseFile(key governor.Key, id string) *os.File
}

// stopCause is the reason Run gives supervise's Stop; it comes back in
// Exit.Stopped when the command was still running.
type stopCause struct {
	code    int
	outcome Outcome
	msg     string
}

func (c *stopCause) Error() string { return c.msg }

// run is one invocation.
type run struct {
	o      Options
	env    []string
	stderr io.Writer
	id     string
	rec    Record
	recf   *os.File
	sigs   chan os.Signal

	items   []*item
	session string
	wd      *watchdog
	g       *governor.Governor
	leases  []*governor.Lease // acquired by this run, in acquisition order
	slots   []heldSlot        // mkdir slots made by this run, in acquisition order
	// checkLock: the command got its own description of the lease's
	// file, to be checked before the release (awaitLeaseFile)
	checkLock map[*governor.Lease]bool
	waited    time.Duration
}

// Run runs the command of o holding its slots, as `governor run` does (see
// the package documentation), and returns the exit code: the command's
// own, or one of the Exit constants. Every message, refusals included,
// goes to o.Stderr. When Run returns, the command's whole process tree is
// gone, every lease this invocation acquired is released, the Governor
// that o.Open returned is closed and the end record (if any) is written. Run
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
	return r.run(ctx)
}

func (r *run) run(ctx context.Context) int {
	if r.o.Record != "" {
		f, err := openRecord(r.o.Record)
		if err != nil {
			return r.fail(ExitFailure, err)
		}
		r.recf = f
	}
	items, err := plan(&r.o)
	if err != nil {
		return r.fail(ExitFailure, err)
	}
	r.items = items
	if r.o.Open == nil {
		return r.fail(ExitFailure, errors.New("runner: Options.Open is nil"))
	}
	if commandMissing(r.o.Args[0], r.env) {
		return r.finish(ExitNotFound, OutcomeError, fmt.Errorf("%s: command not found", r.o.Args[0]))
	}

	signal.Notify(r.sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(r.sigs)

	// The default session names governor, not the watchdog declared as
	// the holder's pid.
	r.session = Session(r.o.Session, r.env)
	if r.session == "" {
		r.session = fmt.Sprintf("%s:%d", r.rec.Host, r.rec.PID)
	}
	if len(r.o.Watchdog) > 0 {
		wd, err := startWatchdog(r.o.Watchdog, r.id, r.env, r.stderr)
		if err != nil {
			return r.fail(ExitFailure, err)
		}
		r.wd = wd
	}

	if code, outcome, err := r.acquire(ctx); code >= 0 {
		return r.finish(code, outcome, err)
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
		end, err := r.g.Provider(p, r.o.ProviderLimits[p]).Report(ctx, outcome)
		switch {
		case err != nil:
			fmt.Fprintf(r.stderr, "governor: provider %s: %s\n", p, safetext.Escape(err.Error()))
		case outcome != nil:
			fmt.Fprintf(r.stderr, "governor: provider %s: the command exited %d (--backoff-exit-code): %s\n", p, code,
				governor.CoolOffNote(end, time.Until(end)))
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
		<-done // the acquire withdraws its waiter and releases partial grants
		r.releaseAll()
		n := int(sig.(syscall.Signal))
		return 128 + n, OutcomeInterrupted, fmt.Errorf("interrupted by %s while waiting for slots; nothing is held", signalName(sig))
	}
}

func (r *run) openAndAcquire(ctx context.Context) (int, Outcome, error) {
	oo := OpenOptions{Session: r.session, Command: r.rec.Command}
	if r.wd != nil {
		oo.PID, oo.RunID = r.wd.pid(), r.id
		if cg, ok := proc.ChildCgroup(proc.RunCgroupName(r.id)); ok {
			oo.Cgroup = cg
		}
	}
	g, err := r.o.Open(ctx, oo)
	if err != nil {
		return ExitFailure, OutcomeError, err
	}
	r.g = g
	r.rec.Project, r.rec.Session = g.Project(), g.Session()

	held, err := HeldFromEnv(r.env)
	if err != nil {
		fmt.Fprintf(r.stderr, "governor: ignoring a malformed entry of the environment: %v\n", err)
	}
	byKey := map[governor.Key]HeldLease{}
	for _, h := range held {
		byKey[h.Key] = h
	}
	var wants []governor.Want
	mode := governor.Fail
	if r.o.IfBusy == IfBusyWait { // resolved by plan
		mode = governor.Wait
	}
	var sl *statusLine    // drawn only while AcquireAll waits
	var waitingFor string // the resource last queued for, for a --wait-timeout message
	inside, err := r.execRunInside(ctx, g.Project(), byKey)
	if err != nil {
		return ExitFailure, OutcomeError, err
	}
	for _, it := range r.items {
		k := governor.Key{Project: g.Project(), Resource: it.name}
		if inside && isExecRun(it.name) {
			it.nested, it.held = true, byKey[k] // part of the ancestor's exec run
			continue
		}
		if h, ok := byKey[k]; ok {
			err := ProvenHeld(ctx, g, h)
			if err == nil {
				it.nested, it.held = true, h
				continue
			}
			if !errors.Is(err, governor.ErrNotOwner) && !errors.Is(err, governor.ErrNotHeld) {
				return ExitFailure, OutcomeError, err
			}
			fmt.Fprintf(r.stderr, "governor: %s: %s; acquiring %s\n", EnvHeld, safetext.Escape(err.Error()), it.name)
		}
		if r.o.MkdirLocks[it.name] != "" && HeavyLockHeld(r.env) {
			it.nested = true // an ancestor holds the mkdir slot, and so the resource
			continue
		}
		if note, err := NoteLimit(ctx, g, it.name, r.o.Limit, it.limit, r.o.LimitOrigins[it.name]); err == nil && note != nil {
			// At once, before any wait. A failed read is the acquire's
			// to report.
			fmt.Fprintf(r.stderr, "governor: %s\n", note.Message)
		}
		name := it.name
		wants = append(wants, governor.Want{Resource: it.name, AcquireOptions: governor.AcquireOptions{
			Limit: it.limit, Weight: it.weight, Exclusive: it.exclusive, Mode: mode, ProgressTimeout: r.o.ProgressTimeout,
			Policy: r.o.Policies[it.name], Priority: r.o.Priority, FairKey: r.o.FairKey,
			Supersede: r.o.Supersede, CancelInProgress: r.o.CancelInProgress,
			OnQueued: func(res governor.Result) {
				waitingFor = name
				if sl != nil {
					sl.update(name, res, expectedWait(ctx, g, name, res.Position))
				}
			},
		}})
	}
	wctx := ctx
	if mode == governor.Wait && r.o.WaitTimeout > 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, r.o.WaitTimeout)
		defer cancel()
	}
	if len(wants) == 0 {
		return r.takeBudget(wctx, g, mode)
	}
	if fd, ok := terminal(r.stderr); ok && mode == governor.Wait {
		sl = newStatusLine(r.stderr, func() int { return columns(fd) })
	}
	start := time.Now()
	leases, err := r.acquireAll(wctx, g, wants, mode)
	r.waited = time.Since(start)
	if sl != nil {
		sl.close()
	}
	if err == nil {
		r.leases = leases
		for _, l := range leases {
			for _, it := range r.items {
				if it.name == l.Resource() {
					it.lease = l
				}
			}
		}
		return r.takeBudget(wctx, g, mode)
	}
	err = AcquireFailed(ctx, g, err, r.o.IfBusy == IfBusySkip, r.o.WaitTimeout, waitingFor)
	code := exitcode.For(err)
	return code, OutcomeOf(code), err
}

// takeBudget takes one request (and the token estimate) of each
// --provider's rate budget, after its slot. A spent budget is handled as a
// busy slot: fail 73, skip 75, wait until it allows (or --wait-timeout).
func (r *run) takeBudget(ctx context.Context, g *governor.Governor, mode governor.Mode) (int, Outcome, error) {
	for _, p := range r.o.Providers {
		rl, ok := r.o.Rates[p]
		if !ok || !rl.limited() {
			continue
		}
		req := governor.RateRequest{Key: governor.Key{Project: g.Project(), Resource: governor.ProviderResource(p)},
			Requests: rl.Requests, Tokens: rl.Tokens, NRequests: 1, NTokens: r.o.Tokens, Shadow: rl.Shadow}
		if mode == governor.Wait {
			start := time.Now()
			err := g.WaitRate(ctx, req)
			r.waited += time.Since(start)
			switch {
			case err == nil:
				continue
			case errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil && r.o.WaitTimeout > 0:
				return ExitBusy, OutcomeBusy, &NotAcquiredError{Msg: fmt.Sprintf("provider %s: rate budget not available within --wait-timeout %v", p, r.o.WaitTimeout)}
			case errors.Is(err, governor.ErrTooHeavy), errors.Is(err, governor.ErrInvalid):
				return ExitFailure, OutcomeError, err
			}
			return ExitFailure, OutcomeError, err
		}
		res, err := g.TryRate(ctx, req)
		if err != nil {
			return ExitFailure, OutcomeError, err
		}
		if !res.Allowed {
			na := &NotAcquiredError{Msg: fmt.Sprintf("provider %s: rate limit reached (%d requests / %d tokens per %v); retry after %v",
				p, rl.Requests.Rate, rl.Tokens.Rate, max(rl.Requests.Period, rl.Tokens.Period), res.RetryAfter.Round(time.Millisecond))}
			if !res.CoolOff.IsZero() {
				na.Msg = fmt.Sprintf("provider %s: %s", p, governor.CoolOffNote(res.CoolOff, res.RetryAfter))
			}
			if r.o.IfBusy == IfBusySkip {
				na.Msg += "; skipped (--if-busy skip)"
				na.Skipped = true
				return ExitSkipped, OutcomeSkipped, na
			}
			return ExitBusy, OutcomeBusy, na
		}
	}
	return -1, "", nil
}

// execute starts the command and supervises it until its tree is gone.
func (r *run) execute() (int, Outcome, error) {
	held, _ := HeldFromEnv(r.env)
	var mine []HeldLease
	for _, h := range held {
		if !r.acquiredHere(h.Key) {
			mine = append(mine, h)
		}
	}
	var extra []*os.File
	defer func() {
		for _, f := range extra {
			f.Close() // the child has its own copies
		}
	}()
	lf, _ := r.g.Backend().(leaseFiler)
	for _, l := range r.leases {
		mine = append(mine, HeldLease{Key: l.Key(), LeaseID: l.ID(), Secret: l.Handle().Secret, Token: l.Token()})
		if lf != nil {
			f, checkable := treeLockFile(lf.LeaseFile(l.Key(), l.ID()))
			if f != nil {
				extra = append(extra, f)
			}
			if checkable {
				r.checkLock[l] = true // see awaitLeaseFile
			}
		}
	}
	runIDs := strings.TrimSpace(getenv(r.env, EnvRunIDs) + " " + r.id)
	// A command run from an interactive terminal gets it (it may read it,
	// and Ctrl-C reaches it); governor takes it back when the tree is gone.
	stdin, _ := r.o.Stdin.(*os.File)
	if r.o.Stdin == nil {
		stdin = os.Stdin
	}
	r.planStop() // the watchdog has the plan before the command runs
	tree, err := supervise.Start(supervise.Options{
		Args:       r.o.Args,
		Env:        r.slotEnv(childEnv(r.env, mine, r.session, runIDs)),
		Stdin:      r.o.Stdin,
		Stdout:     r.o.Stdout,
		Stderr:     r.o.Stderr,
		KillGrace:  r.o.KillGrace,
		ExtraFiles: extra,
		Terminal:   supervise.ForegroundTerminal(stdin),
		Cgroup:     proc.RunCgroupName(r.id), // the watchdog finds it by the run id
	})
	switch {
	case errors.Is(err, supervise.ErrNotFound):
		return ExitNotFound, OutcomeError, fmt.Errorf("%s: command not found", r.o.Args[0])
	case errors.Is(err, supervise.ErrNotExecutable):
		return ExitCannotExec, OutcomeError, fmt.Errorf("%s: cannot execute: %s", r.o.Args[0], strings.TrimPrefix(err.Error(), supervise.ErrNotExecutable.Error()+": "))
	case err != nil:
		return ExitFailure, OutcomeError, err
	}
	if r.wd != nil {
		r.wd.follow(tree) // each plan names the tree's processes
	}
	return r.supervise(tree)
}

// dupFile duplicates f's descriptor (close-on-exec), or returns nil when f
// is nil or closed. The backend closes a lease file the moment the lease
// is lost, possibly while the command is being started; the duplicate
// cannot be closed under us, and shares the original's open file
// description, and so its lock.
func dupFile(f *os.File) *os.File {
	if f == nil {
		return nil
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	nfd := -1
	if err := rc.Control(func(fd uintptr) {
		nfd, _ = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0)
	}); err != nil || nfd < 0 {
		return nil
	}
	return os.NewFile(uintptr(nfd), f.Name())
}

func (r *run) acquiredHere(k governor.Key) bool {
	for _, l := range r.leases {
		if l.Key() == k {
			return true
		}
	}
	return false
}

// supervise forwards signals, enforces --timeout, watches the leases and
// the watchdog, and returns once the tree is gone.
func (r *run) supervise(tree *supervise.Tree) (int, Outcome, error) {
	type waitResult struct {
		exit supervise.Exit
		err  error
	}
	waited := make(chan waitResult, 1)
	go func() {
		e, err := tree.Wait()
		waited <- waitResult{e, err}
	}()

	lost := make(chan *governor.Lease, len(r.leases))
	renewed := make(chan struct{}, 1)
	quit := make(chan struct{})
	defer close(quit)
	for _, l := range r.leases {
		go func() {
			for {
				select {
				case <-l.Done():
					lost <- l
					return
				case <-l.Renewed():
					select {
					case renewed <- struct{}{}:
					default:
					}
				case <-quit:
					return
				}
			}
		}()
	}
	// The tree must be gone by the leases' local deadline if no renewal
	// comes: governor stops it from the plan's TERM instant, and the
	// watchdog too if governor is stopped meanwhile (see Watchdog).
	plan, planned := r.planStop()
	deadlineT := time.NewTimer(time.Hour)
	deadlineT.Stop()
	defer deadlineT.Stop()
	if planned {
		deadlineT.Reset(time.Until(plan.term))
	}
	var timeout <-chan time.Time
	if r.o.Timeout > 0 {
		t := time.NewTimer(r.o.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	var wdExited <-chan struct{}
	if r.wd != nil {
		wdExited = r.wd.exited
	}

	stopping := false
	stop := func(c *stopCause) {
		if stopping {
			return
		}
		stopping = true
		if c == nil {
			go tree.Stop(nil) // leftovers of a leader that exited
			return
		}
		if r.o.Report == nil { // else the cause is reported at the end
			fmt.Fprintf(r.stderr, "governor: %s\n", c.msg)
		}
		if c.outcome == OutcomeLeaseLost && planned {
			go tree.StopBy(c, plan.kill) // gone by the leases' deadline
			return
		}
		go tree.Stop(c)
	}
	leaderDone := tree.Done()
	interrupts := 0
	for {
		select {
		case w := <-waited:
			if w.err != nil {
				return ExitFailure, OutcomeError, w.err
			}
			var c *stopCause
			if errors.As(w.exit.Stopped, &c) {
				if r.o.Report != nil {
					return c.code, c.outcome, c
				}
				return c.code, c.outcome, nil
			}
			if planned && w.exit.Signal != 0 && time.Now().After(plan.term) {
				// Killed while governor could not act (it was stopped past
				// the plan's TERM instant): the watchdog's doing.
				return ExitLeaseLost, OutcomeLeaseLost, fmt.Errorf("the lease on %s was lost while governor was stopped past its deadline; the watchdog killed the command tree (%s); its message above says whether every process of it was gone",
					plan.resource, w.exit.Signal)
			}
			return supervise.ExitCode(w.exit), OutcomeRan, nil
		case <-leaderDone:
			leaderDone = nil
			stop(nil)
		case <-timeout:
			stop(&stopCause{ExitTimeout, OutcomeTimeout,
				fmt.Sprintf("--timeout %v passed; stopping the command tree (TERM, then KILL after %v)", r.o.Timeout, r.killGrace())})
		case <-renewed:
			if plan, planned = r.planStop(); planned && !stopping {
				deadlineT.Reset(time.Until(plan.term))
			}
		case <-deadlineT.C:
			stop(plan.cause())
		case l := <-lost:
			stop(&stopCause{ExitLeaseLost, OutcomeLeaseLost,
				fmt.Sprintf("the lease on %s was lost (%v); stopping the command tree: another holder may be granted the slot", l.Resource(), l.Err())})
		case <-wdExited:
			wdExited = nil
			stop(&stopCause{ExitLeaseLost, OutcomeLeaseLost,
				fmt.Sprintf("the watchdog (pid %d) died; stopping the command tree (governor, declared beside it, keeps the slots held until the tree is gone)", r.wd.pid())})
		case sig := <-r.sigs:
			s := sig.(syscall.Signal)
			if s == syscall.SIGINT {
				interrupts++
				if interrupts > 1 {
					fmt.Fprintln(r.stderr, "governor: second interrupt: killing the command tree")
					s = syscall.SIGKILL
				}
			}
			_ = tree.Signal(s)
		}
	}
}

func (r *run) killGrace() time.Duration {
	if r.o.KillGrace > 0 {
		return r.o.KillGrace
	}
	return supervise.DefaultKillGrace
}

// releaseAll releases this run's leases in reverse acquisition order and
// reports whether one had been lost.
func (r *run) releaseAll() (lost []string) {
	for i := len(r.leases) - 1; i >= 0; i-- {
		l := r.leases[i]
		released, ok := r.awaitLeaseFile(l)
		if !ok {
			continue // detached: an escaped process holds its lease file
		}
		r.releaseSlot(l.Resource()) // a mkdir slot goes before its lease
		err := l.Release()
		released()
		switch {
		case errors.Is(err, governor.ErrLeaseLost):
			lost = append(lost, l.Resource())
		case err != nil:
			fmt.Fprintf(r.stderr, "governor: releasing %s: %v (it expires after its TTL)\n", l.Resource(), err)
		}
	}
	return lost
}

// finish releases, lets the watchdog go, closes the Governor, writes the
// end record and returns code. err, if set, is reported first (Options.Report,
// else WriteReport on Stderr).
func (r *run) finish(code int, outcome Outcome, err error) int {
	if lost := r.releaseAll(); len(lost) > 0 && outcome == OutcomeRan {
		lostErr := fmt.Errorf("the lease on %s was lost before the command ended (exit %d); its work may have overlapped another holder's",
			strings.Join(lost, ", "), code)
		err = errors.Join(err, lostErr)
		code, outcome = ExitLeaseLost, OutcomeLeaseLost
	}
	if r.o.Report != nil {
		r.o.Report(code, err)
	} else {
		WriteReport(r.stderr, err)
	}
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
	rec.Nested = len(r.items) > 0
	rec.Resources = make([]RecordResource, 0, len(r.items))
	for _, it := range r.items {
		rr := RecordResource{Name: it.name, Weight: it.weight, Limit: it.limit, Nested: it.nested}
		switch {
		case it.nested:
			rr.Lease, rr.Token = it.held.LeaseID, it.held.Token
		case it.lease != nil:
			rr.Lease, rr.Token = it.lease.ID(), it.lease.Token()
		}
		rec.Nested = rec.Nested && it.nested
		rec.Resources = append(rec.Resources, rr)
	}
	rec.Start, rec.Granted, rec.End = rec.Start.UTC(), rec.Granted.UTC(), rec.End.UTC()
	if err := appendRecord(r.recf, rec); err != nil {
		fmt.Fprintf(r.stderr, "governor: --record %s: %v\n", r.o.Record, err)
	}
}

// commandMissing reports whether name certainly cannot be found, so that a
// run never waits for slots only to exit 127. Anything subtler is left to
// supervise.Start, which classifies it precisely.
func commandMissing(name string, env []string) bool {
	if name == "" {
		return true
	}
	if strings.Contains(name, "/") {
		_, err := os.Stat(name)
		return errors.Is(err, fs.ErrNotExist)
	}
	path, ok := lookupEnv(env, "PATH")
	if !ok {
		path = os.Getenv("PATH")
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return false
		}
	}
	return true
}

func lookupEnv(env []string, key string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok {
			return v, true
		}
	}
	return "", false
}

func signalName(sig os.Signal) string {
	switch sig {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP"
	case syscall.SIGQUIT:
		return "SIGQUIT"
	}
	return sig.String()
}

// shellQuote quotes s for a POSIX shell unless it needs no quoting.
func shellQuote(s string) string {
	safe := s != ""
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("_@%+=:,./-", c)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func newID() string {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("runner: crypto/rand failed: " + err.Error()) // never happens on Linux
	}
	return hex.EncodeToString(b[:])
}

// lockedWriter serialises writes to a writer that is not a file.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// sameWriter reports whether a and b are the same writer; writers of
// uncomparable dynamic types never are.
func sameWriter(a, b io.Writer) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a == b
}
