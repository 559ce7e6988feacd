package runner

import (
	"fmt"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/safetext"
)

// The file backend proves a lease alive while its lease file is locked
// (leaseFiler). The command inherits the lock, so that a descendant that
// outlives governor keeps the slot; and so the lease file is a member of
// the tree that no scan can miss: a descendant that left the tree (setsid,
// environment cleared, orphaned) still holds it. Before releasing, Run
// checks that nobody does (leaseFileHeld), and keeps the slot — renewed —
// while someone does.
//
// The command gets an open file description of its own (treeLockFile),
// not the Backend's: the check unlocks the Backend's and tries
// LOCK_EX|LOCK_NB on a third, which fails exactly while a process holds
// the command's.

// treeLockFile opens lease file f anew for the command and takes a shared
// lock on it, beside the Backend's. ok is false when it cannot: the
// command then gets a duplicate of the Backend's descriptor (dupFile),
// which keeps the proof but cannot be checked apart from it.
func treeLockFile(f *os.File) (_ *os.File, ok bool) {
	if f == nil {
		return nil, false
	}
	fd, err := unix.Open(f.Name(), unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err == nil && !sameFile(fd, f) {
		unix.Close(fd)
		err = syscall.ESTALE // replaced meanwhile: not the lease's file
	}
	if err == nil {
		if err = flockRetry(fd, unix.LOCK_SH|unix.LOCK_NB); err != nil {
			unix.Close(fd)
		}
	}
	if err != nil {
		return dupFile(f), false
	}
	return os.NewFile(uintptr(fd), f.Name()), true
}

// sameFile reports whether descriptor fd and f name one file.
func sameFile(fd int, f *os.File) bool {
	var a unix.Stat_t
	if unix.Fstat(fd, &a) != nil {
		return false
	}
	st, err := f.Stat()
	if err != nil {
		return false
	}
	b, ok := st.Sys().(*syscall.Stat_t)
	return ok && uint64(a.Dev) == uint64(b.Dev) && uint64(a.Ino) == uint64(b.Ino)
}

func flockRetry(fd, how int) error {
	for {
		if err := unix.Flock(fd, how); err != unix.EINTR {
			return err
		}
	}
}

// leaseFileHeld reports whether a process other than this one holds the
// lock of the command's open file description of lease file f (the
// Backend's, which f is): the Backend's lock is dropped and an exclusive
// one tried on a fresh description; it fails only while a process holds
// the command's. When it is held, the Backend's lock is taken again; when
// it is not, free is the exclusive lock, which the caller closes once the
// lease is released (until then it proves the lease alive to the other
// processes' reclaims). A file that cannot be checked is not held; free
// is then nil.
func leaseFileHeld(f *os.File) (held bool, free *os.File) {
	own := dupFile(f)
	if own == nil {
		return false, nil
	}
	defer own.Close()
	fd, err := unix.Open(f.Name(), unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return false, nil
	}
	if !sameFile(fd, f) || flockRetry(int(own.Fd()), unix.LOCK_UN) != nil {
		unix.Close(fd)
		return false, nil
	}
	if flockRetry(fd, unix.LOCK_EX|unix.LOCK_NB) == nil {
		return false, os.NewFile(uintptr(fd), f.Name())
	}
	unix.Close(fd)
	_ = flockRetry(int(own.Fd()), unix.LOCK_SH|unix.LOCK_NB) // the proof again
	return true, nil
}

// awaitLeaseFile returns once no process outside this one holds l's
// lease file (leaseFileHeld), keeping l held and renewed meanwhile, and
// says so. It returns a func to call once l is released. ok is false
// when governor was told to stop (a signal) first: l must then not be
// released — it is detached, and lives while that process holds its
// lease file, until its TTL.
func (r *run) awaitLeaseFile(l *governor.Lease) (released func(), ok bool) {
	lf, _ := r.g.Backend().(leaseFiler)
	nothing := func() {}
	if lf == nil || !r.checkLock[l] {
		return nothing, true
	}
	f := lf.LeaseFile(l.Key(), l.ID())
	if f == nil {
		return nothing, true // lost: the Backend let go of it
	}
	held, free := leaseFileHeld(f)
	if held {
		fmt.Fprintf(r.stderr, "governor: the command's tree is gone but a process that left it still holds the lease file of %s (it inherited it): the tree is not gone; keeping the slot, renewed, until that process exits\n",
			safetext.Escape(l.Resource()))
	}
	pause := 20 * time.Millisecond
	for held {
		t := time.NewTimer(pause)
		select {
		case <-l.Done():
			t.Stop()
			return nothing, true
		case sig := <-r.sigs:
			t.Stop()
			l.Detach()
			fmt.Fprintf(r.stderr, "governor: %s while a process outside the tree holds the lease file of %s: the lease is not released; it stays held while that process lives, until its TTL\n",
				signalName(sig), safetext.Escape(l.Resource()))
			return nothing, false
		case <-t.C:
		}
		held, free = leaseFileHeld(f)
		pause = min(2*pause, time.Second)
	}
	return func() {
		if free != nil {
			free.Close()
		}
	}, true
}
