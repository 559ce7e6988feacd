package runner

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/proc"
	"github.com/governor-dev/governor/internal/supervise"
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

// execute starts the command and supervises it until its tree is gone.
func (r *run) execute() (int, Outcome, error) {
	var extra []*os.File
	defer func() {
		for _, f := range extra {
			f.Close() // the child has its own copies
		}
	}()
	lf, _ := r.g.Backend().(leaseFiler)
	for _, l := range r.leases {
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
	if r.wd != nil {
		r.wd.write(r.recordMessage()) // where it records what it may do
	}
	r.planStop() // the watchdog has the plan before the command runs
	tree, err := supervise.Start(supervise.Options{
		Args:       r.o.Args,
		Env:        childEnv(r.env, r.childHeld(), r.session, runIDs),
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
	r.started = true
	if r.wd != nil {
		r.wd.follow(tree) // each plan names the tree's processes
	}
	defer r.leaveEntry(tree)() // removed once the tree is gone
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

	var overdue overduePlans
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
			if w.exit.Signal != 0 {
				if p, ok := overdue.killedBy(plan, planned, time.Now()); ok {
					// Killed while governor could not act (it was stopped past
					// the plan's TERM instant): the watchdog's doing.
					return ExitLeaseLost, OutcomeLeaseLost, fmt.Errorf("the lease on %s was lost while governor was stopped past its deadline; the watchdog killed the command tree (%s); its message above says whether every process of it was gone",
						p.resource, w.exit.Signal)
				}
			}
			return supervise.ExitCode(w.exit), OutcomeRan, nil
		case <-leaderDone:
			leaderDone = nil
			stop(nil)
		case <-timeout:
			stop(&stopCause{ExitTimeout, OutcomeTimeout,
				fmt.Sprintf("--timeout %v passed; stopping the command tree (TERM, then KILL after %v)", r.o.Timeout, r.killGrace())})
		case <-renewed:
			overdue.note(plan, planned, time.Now())
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
