package filebackend_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/eventkind"
	"github.com/governor-dev/governor/governor/filebackend"
	"github.com/governor-dev/governor/governor/proc"
)

// helperLock takes the exclusive lock of key's state in state dir dir,
// as a process inside a state write holds it, prints "locked" and waits
// to be killed.
func helperLock(dir string, key governor.Key) error {
	f, err := os.OpenFile(filepath.Join(dir, key.Project, key.Resource, "lock"), os.O_RDWR, 0)
	if err != nil {
		return err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		return err
	}
	fmt.Println("locked")
	select {}
}

// lockedBy starts a helper process holding the lock of p/r's state in
// a fresh state dir, stopped (SIGSTOP) if stop is set, and returns a
// Backend on that dir, the key and the helper.
func lockedBy(t *testing.T, stop bool) (*filebackend.Backend, governor.Key, *helper) {
	t.Helper()
	dir, b, key := heldOnce(t)
	h := startHelper(t, "lock", dir, key)
	if l := h.line(); l != "locked" {
		t.Fatalf("helper said %q", l)
	}
	pid := h.cmd.Process.Pid
	if stop {
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(time.Minute)
		for s, err := proc.Stat(pid); err != nil || !s.Stopped(); s, err = proc.Stat(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("helper %d not stopped after a minute (%v)", pid, err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return b, key, h
}

// stoppedLockHolder is lockedBy with the helper stopped, on Linux: it
// skips t elsewhere, where the holder of a lock cannot be told.
func stoppedLockHolder(t *testing.T) (*filebackend.Backend, governor.Key, *helper) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the holder of a lock is told from /proc/locks")
	}
	return lockedBy(t, true)
}

// checkNamesHolder fails t unless err is a *LockWaitError matching want
// that names key's lock file and, on Linux, the holder pid and, if
// stopped is set, says it is stopped.
func checkNamesHolder(t *testing.T, err, want error, key governor.Key, pid int, stopped bool) {
	t.Helper()
	var w *filebackend.LockWaitError
	if !errors.Is(err, want) || !errors.As(err, &w) {
		t.Fatalf("err = %v, want a LockWaitError matching %v", err, want)
	}
	msg := err.Error()
	lockFile := filepath.Join(key.Project, key.Resource, "lock")
	if !strings.Contains(msg, lockFile) || w.Resource != key.Resource {
		t.Errorf("the error does not name %s (resource %s): %s", lockFile, key.Resource, msg)
	}
	if runtime.GOOS != "linux" {
		return // the holder is told from /proc/locks
	}
	if w.Holder.PID != pid || w.Holder.Stopped != stopped || !strings.Contains(msg, "pid "+strconv.Itoa(pid)+" (") {
		t.Errorf("holder %+v, want pid %d stopped %v: %s", w.Holder, pid, stopped, msg)
	}
	if stopped && !strings.Contains(msg, "stopped): a process stopped inside a state write holds every other process") {
		t.Errorf("the error does not say its holder is stopped: %s", msg)
	}
}

// TestStoppedLockHolderNamed: a call that gives up waiting for a
// resource's state lock held by a stopped process (one SIGSTOPped inside
// a state write) says so, naming the lock file, the holder's pid and
// that it is stopped, and still matches its context's error.
func TestStoppedLockHolderNamed(t *testing.T) {
	b, key, h := stoppedLockHolder(t)
	pid := h.cmd.Process.Pid
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := b.Acquire(ctx, req(key, 1, 1, governor.Fail))
	checkNamesHolder(t, err, context.DeadlineExceeded, key, pid, true)

	// A call whose context ended before it began says so too: a waiter's
	// Notify may have spent the whole wait on the lock.
	_, err = b.Acquire(ctx, req(key, 1, 1, governor.Fail))
	checkNamesHolder(t, err, context.DeadlineExceeded, key, pid, true)

	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	err = b.Record(cctx, key, governor.Event{Kind: eventkind.WatchdogKill, LeaseID: "some-lease", Token: 1, Detail: "run x: killed"})
	checkNamesHolder(t, err, context.Canceled, key, pid, true)
}

// TestStoppedLockHolderNamedToWaiter: a Governor's waiting Acquire that
// a stopped lock holder keeps waiting until its deadline returns the
// error naming the holder (through Notify, which waits on the lock
// first, and the Acquire that finds the deadline passed).
func TestStoppedLockHolderNamedToWaiter(t *testing.T) {
	b, key, h := stoppedLockHolder(t)
	g, err := governor.New(b, governor.Options{Project: key.Project})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		h.kill() // first: Close would wait for the lock
		g.Close()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = g.Acquire(ctx, key.Resource, governor.AcquireOptions{Limit: 1, Mode: governor.Wait})
	checkNamesHolder(t, err, context.DeadlineExceeded, key, h.cmd.Process.Pid, true)
}

// TestRunningLockHolderNamed: a wait of more than a second cut by its
// context, on a lock held by a running process, names the lock and its
// holder, not stopped; so does a call without a deadline, after
// lockWait (ErrLockHeld).
func TestRunningLockHolderNamed(t *testing.T) {
	b, key, h := lockedBy(t, false)
	pid := h.cmd.Process.Pid
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	_, err := b.Acquire(ctx, req(key, 1, 1, governor.Fail))
	checkNamesHolder(t, err, context.DeadlineExceeded, key, pid, false)
	if !strings.Contains(err.Error(), "governor holds it for milliseconds") {
		t.Errorf("the error does not say what a long hold means: %v", err)
	}

	_, err = b.Acquire(context.Background(), req(key, 1, 1, governor.Fail))
	checkNamesHolder(t, err, filebackend.ErrLockHeld, key, pid, false)
}
