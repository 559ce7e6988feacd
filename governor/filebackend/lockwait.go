package filebackend

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/safetext"
)

// ErrLockHeld is matched (errors.Is) by the error of a call that could
// not take a resource's lock within lockWait, having no deadline of its
// own. It is not final: a waiter retries.
var ErrLockHeld = errors.New("governor: file backend: lock held by another process")

// lockWait bounds the wait for a resource's lock of a call without a
// deadline. governor holds a lock for milliseconds, so one held longer
// is held by a process that is not governor, or that is stopped inside
// a critical section: the caller is told so, naming the file, rather
// than left hanging.
const lockWait = 5 * time.Second

// lockSlow is how long a wait for a resource's lock must have lasted
// for its end by the caller's context to be laid on the lock's holder
// (unless the holder is stopped): a shorter wait met the ordinary
// contention of milliseconds-long writes.
const lockSlow = time.Second

// LockWaitError is the error of a call that gave up waiting for the
// lock of a resource's state (DIR/PROJECT/RESOURCE/lock) held too long
// by another process: its context ended (errors.Is
// context.DeadlineExceeded or context.Canceled), or, without a
// deadline, lockWait passed (errors.Is ErrLockHeld). It names the lock
// file and, where the system tells (Linux: /proc/locks), its holder. A
// context that ends in a short wait on a running holder is returned
// as it is: that is contention, not a held lock.
type LockWaitError struct {
	// Resource is the resource whose state is locked; Path its lock file.
	Resource, Path string
	// Holder is the process holding the lock; its PID is 0 when the
	// system cannot tell.
	Holder LockHolder
	// Waited is how long the call waited for the lock (0: it did not,
	// its context had ended before it began).
	Waited time.Duration
	// Err is the context's error, or ErrLockHeld.
	Err error

	file fileID
}

// LockHolder is a process that holds a lock.
type LockHolder struct {
	// PID is 0 when unknown.
	PID int
	// Command is its command name ("" when unknown).
	Command string
	// Stopped: the process is stopped (SIGSTOP, Ctrl-Z) or traced, and
	// holds the lock until it is resumed or killed.
	Stopped bool
}

func (e *LockWaitError) Error() string {
	if errors.Is(e.Err, ErrLockHeld) {
		return e.Err.Error() + ": " + e.Reason()
	}
	return "governor: file backend: " + e.Reason() + ": " + e.Err.Error()
}

func (e *LockWaitError) Unwrap() error { return e.Err }

// Reason says, in one line, which lock the call waited for, who holds it
// and what that means, without the context's error.
func (e *LockWaitError) Reason() string {
	h := e.Holder
	who := "another process"
	if h.PID > 0 {
		who = "pid " + strconv.Itoa(h.PID)
		var about []string
		if h.Command != "" {
			about = append(about, safetext.Escape(h.Command))
		}
		if h.Stopped {
			about = append(about, "stopped")
		}
		if len(about) > 0 {
			who += " (" + strings.Join(about, ", ") + ")"
		}
	}
	if h.Stopped {
		return fmt.Sprintf("the state of %s (%s) is locked by %s: a process stopped inside a state write holds every other process of the resource until it is resumed (kill -CONT %d) or killed",
			e.Resource, e.Path, who, h.PID)
	}
	suspects := "a process that is not governor, or a stopped or stuck one"
	if h.PID > 0 {
		suspects = "a process that is not governor, or a stuck one"
	}
	return fmt.Sprintf("the state of %s (%s) is locked by %s, not had in %v: governor holds it for milliseconds, so %s, holds it (see lsof %s)",
		e.Resource, e.Path, who, e.Waited.Round(100*time.Millisecond), suspects, e.Path)
}

// fileID is a file's device and inode.
type fileID struct{ dev, ino uint64 }

// fileOf is the fileID of descriptor fd (zero if fstat fails).
func fileOf(fd int) fileID {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return fileID{}
	}
	return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)}
}

// lock takes the lock of key's directory dir, waiting no longer than ctx
// allows (and lockWait when ctx has no deadline), and returns what
// unlocks it. A wait that ends so is a *LockWaitError, or ctx's own
// error after a short wait on a running holder (or in this process's
// queue, below).
//
// The calls of one process take turns first (Backend.turn): one at a
// time waits for the flock, the others in order behind it. flock(2)
// wakes every waiter at each unlock and serves none in order, so with
// 16 goroutines of each of 4 processes on one resource (the filebackend
// race under policies) one of them, a release, went 5 s without the lock
// on a loaded machine and failed; taking turns leaves one waiter per
// process on the flock, and serves a process's own calls in order, but
// for the calls that end or keep a holding (ahead: releases, renewals),
// which go before the acquires waiting: a release is never queued behind
// the waiters it would serve, nor a renewal until its lease expires.
func (b *Backend) lock(ctx context.Context, dir int, key governor.Key, ahead bool) (func(), error) {
	lctx := ctx
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		lctx, cancel = context.WithTimeout(ctx, lockWait)
		defer cancel()
	}
	done, err := b.turn(lctx, key, ahead)
	if err != nil {
		if ctx.Err() == nil { // lockWait passed in the queue
			return nil, fmt.Errorf("%w: %s waited %v behind this process's other calls on it", ErrLockHeld, key.Resource, lockWait)
		}
		return nil, err
	}
	lock, err := lockDir(lctx, dir)
	b.noteWait(key, err)
	if err == nil {
		return func() { unix.Close(lock); done() }, nil
	}
	done()
	path := b.resourceFile(key, lockName)
	var w *LockWaitError
	if !errors.As(err, &w) {
		return nil, fmt.Errorf("governor: file backend: lock %s: %w", path, err)
	}
	w.Resource, w.Path, w.Holder = key.Resource, path, lockHolder(w.file)
	if ctx.Err() == nil { // lockWait passed
		w.Err = ErrLockHeld
		return nil, w
	}
	if !w.Holder.Stopped && w.Waited < lockSlow {
		return nil, ctx.Err()
	}
	return nil, w
}

// turnOf is a resource's queue in this process: held by the call that
// waits for or holds the resource's flock; the calls waiting behind it
// are served in the order they came, those that go ahead (section.ahead:
// releases and renewals) before the others. users counts its holder and
// waiters, so that the entry goes when nobody uses it.
type turnOf struct {
	held          bool
	ahead, behind []chan struct{}
	users         int
}

// turn waits, until ctx ends, for key's turn in this process (see lock)
// and returns what ends it; with ahead, the call goes before every
// waiting call that does not.
func (b *Backend) turn(ctx context.Context, key governor.Key, ahead bool) (func(), error) {
	b.mu.Lock()
	if b.turns == nil {
		b.turns = map[governor.Key]*turnOf{}
	}
	t := b.turns[key]
	if t == nil {
		t = &turnOf{}
		b.turns[key] = t
	}
	t.users++
	done := func() { b.pass(key, t) }
	if !t.held {
		t.held = true
		b.mu.Unlock()
		return done, nil
	}
	ch := make(chan struct{})
	if ahead {
		t.ahead = append(t.ahead, ch)
	} else {
		t.behind = append(t.behind, ch)
	}
	b.mu.Unlock()
	select {
	case <-ch:
		return done, nil
	case <-ctx.Done():
	}
	b.mu.Lock()
	queued := t.drop(ch)
	if queued {
		t.leave(b, key)
	}
	b.mu.Unlock()
	if !queued { // the turn came as ctx ended: the next one's
		done()
	}
	return nil, ctx.Err()
}

// pass ends t's turn: the next waiter has it (one going ahead first).
func (b *Backend) pass(key governor.Key, t *turnOf) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case len(t.ahead) > 0:
		close(t.ahead[0])
		t.ahead = t.ahead[1:]
	case len(t.behind) > 0:
		close(t.behind[0])
		t.behind = t.behind[1:]
	default:
		t.held = false
	}
	t.leave(b, key)
}

// leave counts one user of t less; b.mu is held.
func (t *turnOf) leave(b *Backend, key governor.Key) {
	if t.users--; t.users == 0 {
		delete(b.turns, key)
	}
}

// drop takes ch out of t's waiters and says whether it was there (not
// yet handed the turn); b.mu is held.
func (t *turnOf) drop(ch chan struct{}) bool {
	for _, q := range []*[]chan struct{}{&t.ahead, &t.behind} {
		for i, c := range *q {
			if c == ch {
				*q = append((*q)[:i:i], (*q)[i+1:]...)
				return true
			}
		}
	}
	return false
}

// noteWait keeps, for ended, how long a wait for key's lock lasted when
// a context cut it after lockSlow or more (err, lockDir's), until the
// lock is had again (err nil).
func (b *Backend) noteWait(key governor.Key, err error) {
	var w *LockWaitError
	cut := errors.As(err, &w) && w.Waited >= lockSlow
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case cut:
		if b.cut == nil {
			b.cut = map[governor.Key]time.Duration{}
		}
		b.cut[key] = w.Waited
	case err == nil && len(b.cut) > 0:
		delete(b.cut, key)
	}
}

// ended is the error of a call on key whose context ctx ended before it
// began: ctx's error, as a *LockWaitError when a stopped process holds
// the resource's lock, or when it is still held after a wait for it that
// a context cut (noteWait). A waiter may have spent its whole wait on
// that lock before (Notify takes it first), and it is what the caller
// needs to know.
func (b *Backend) ended(ctx context.Context, key governor.Key) error {
	err := ctx.Err()
	b.mu.Lock()
	waited, cut := b.cut[key]
	b.mu.Unlock()
	dir, derr := b.openResource(key.Project, key.Resource, false)
	if derr != nil {
		return err
	}
	defer unix.Close(dir)
	fd, ferr := openat(dir, lockName, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if ferr != nil {
		return err
	}
	f := fileOf(fd)
	// A try that succeeds (the close undoes it) finds the lock free: the
	// usual case, told without reading /proc/locks.
	held := flock(fd, unix.LOCK_EX|unix.LOCK_NB) == unix.EWOULDBLOCK
	unix.Close(fd)
	if !held {
		return err
	}
	h := lockHolder(f)
	if !h.Stopped && !cut {
		return err
	}
	return &LockWaitError{Resource: key.Resource, Path: b.resourceFile(key, lockName), Holder: h, Waited: waited, Err: err, file: f}
}
