package filebackend

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/eventkind"
)

type tx struct {
	b      *Backend
	key    governor.Key
	dir    int
	unlock func()
	st     *state
	now    clockNow
	dirty  bool
	reaped bool
	// unlink lists files to remove once the state that no longer needs
	// them is written: removing them before would leave a written state
	// naming a lease or waiter without the file that proves it alive.
	unlink []string
	// reapedDecls are the declarations of the holders reap proved dead:
	// their cgroups go once the state without them is written.
	reapedDecls []governor.Declaration
}

// section says how a critical section on one resource begins (see
// within).
type section struct {
	// create makes the resource when it has no directory yet.
	create bool
	// settle prunes what expired or died before the work (tx.settle).
	settle bool
	// owner, when set, must prove the lease id it names (with its
	// secret) before anything is read or made.
	owner *owner
	// absent is what a resource without a directory (create unset)
	// ends the section with; nil means no error.
	absent func() error
	// closing runs the section on a Backend that Close has begun
	// closing: Close's own sections.
	closing bool
	// ahead: the call ends or keeps a holding (a release, a renewal) and
	// takes the resource's lock before this process's other calls
	// waiting for it (Backend.lock).
	ahead bool
}

// owner is a lease id and the secret that proves its owner.
type owner struct{ id, secret string }

// within runs work in one critical section on key, begun as s says: the
// one prologue of every locked operation. It fails with
// governor.ErrClosed on a closed Backend, with governor.NotOwner when
// s.owner is not proven, and with s.absent() for a resource without a
// directory; work commits what it changed (tx.commit).
func within[T any](ctx context.Context, b *Backend, key governor.Key, s section, work func(t *tx) (T, error)) (T, error) {
	var zero T
	if !s.closing && b.isClosed() {
		return zero, governor.ErrClosed
	}
	if o := s.owner; o != nil && !governor.OwnerProven(o.id, o.secret) {
		return zero, governor.NotOwner(key, o.id)
	}
	t, err := b.begin(ctx, key, s.create, s.ahead)
	if errors.Is(err, errNoState) {
		if s.absent == nil {
			return zero, nil
		}
		return zero, s.absent()
	}
	if err != nil {
		return zero, err
	}
	defer t.end()
	if s.settle {
		t.settle()
	}
	return work(t)
}

// do is within for work that returns only an error.
func (b *Backend) do(ctx context.Context, key governor.Key, s section, work func(t *tx) error) error {
	_, err := within(ctx, b, key, s, func(t *tx) (struct{}, error) { return struct{}{}, work(t) })
	return err
}

// commitThen commits t and returns fail, or the commit's error.
func (t *tx) commitThen(fail error) error {
	if err := t.commit(); err != nil {
		return err
	}
	return fail
}

// committed commits t and returns v, or the commit's error.
func committed[T any](t *tx, v T) (T, error) {
	if err := t.commit(); err != nil {
		var zero T
		return zero, err
	}
	return v, nil
}

// begin opens and locks key's directory and reads its state. Without
// create, a resource that has no directory is errNoState.
func (b *Backend) begin(ctx context.Context, key governor.Key, create, ahead bool) (*tx, error) {
	if ctx.Err() != nil {
		return nil, b.ended(ctx, key)
	}
	dir, unlock, err := b.lockResource(ctx, key, create, ahead)
	if err != nil {
		return nil, err
	}
	underLock()
	t := &tx{b: b, key: key, dir: dir, unlock: unlock}
	t.st, err = b.load(dir, key)
	if err != nil {
		t.end()
		return nil, err
	}
	t.now = b.now() // after the lock: instants never go back between sections
	t.dropBadWaiters()
	return t, nil
}

// underLock runs in each section with the resource's lock taken: a stop
// there in the fault tests' build (faultstop.go), nothing otherwise.
var underLock = func() {}

// lockResource opens key's directory (creating it when create is set)
// and takes its lock; the caller closes dir and calls unlock.
func (b *Backend) lockResource(ctx context.Context, key governor.Key, create, ahead bool) (dir int, unlock func(), err error) {
	dir, err = b.openResource(key.Project, key.Resource, create)
	if err != nil {
		return -1, nil, err
	}
	unlock, err = b.lock(ctx, dir, key, ahead)
	if err != nil {
		unix.Close(dir)
		return -1, nil, err
	}
	return dir, unlock, nil
}

// dropBadWaiters drops the queue entries that do not read, each said in
// an event: one bad entry is not served, and blocks nobody behind it.
func (t *tx) dropBadWaiters() {
	ws := t.st.Waiters
	for i := 0; i < len(ws); i++ {
		if why := t.st.badWaiter(i); why != "" {
			t.event(eventkind.Dropped, ws[i].ID, 0, "queue entry does not read: "+why)
			ws = append(ws[:i], ws[i+1:]...)
			t.st.Waiters = ws
			i--
		}
	}
}

// end unlocks.
func (t *tx) end() {
	t.unlock()
	unix.Close(t.dir)
}

// commit writes the state if it changed, then removes what crashed or
// finished processes left behind.
func (t *tx) commit() error {
	if t.dirty {
		data, err := marshal(t.st)
		if err == nil {
			err = writeFileAtomic(t.dir, stateName, data)
		}
		if err != nil {
			return fmt.Errorf("governor: file backend: write %s: %w", t.b.statePath(t.key), err)
		}
		t.dirty = false
	}
	t.removeLeftovers()
	return nil
}

// removeLeftovers removes, once the state is written, what crashed or
// finished processes left behind: the files it no longer needs, the
// cgroups of the holders reap proved dead (see
// governor.Declaration.RemoveDeadCgroup), and what sweep finds.
func (t *tx) removeLeftovers() {
	for _, name := range t.unlink {
		_ = unix.Unlinkat(t.dir, name, 0)
	}
	t.unlink = nil
	for _, d := range t.reapedDecls {
		_ = d.RemoveDeadCgroup() // best effort: else the stale sweep of a later run
	}
	t.reapedDecls = nil
	t.sweep()
}

// sweep removes, under the lock, a temp file of a killed writer, lease
// files of leases no longer held, and wake-up pipes nobody listens to.
// Pipes of queued waiters are left to promote, which checks the head.
func (t *tx) sweep() {
	fd, err := openat(t.dir, ".", unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(fd), ".")
	names, _ := f.Readdirnames(-1)
	f.Close()
	ids := map[string]bool{}
	for _, h := range t.st.Holders {
		ids[escape(h.ID)] = true
	}
	queued := map[string]bool{}
	for _, w := range t.st.Waiters {
		queued[escape(w.ID)] = true
	}
	for _, name := range names {
		switch {
		case name == tempName || name == statsTemp:
			_ = unix.Unlinkat(t.dir, name, 0)
		case strings.HasPrefix(name, leasePrefix):
			if !ids[name[len(leasePrefix):]] {
				_ = unix.Unlinkat(t.dir, name, 0)
			}
		case strings.HasPrefix(name, waitPrefix):
			if id := name[len(waitPrefix):]; !queued[id] && !ids[id] && pokePipe(t.dir, name, false) == pipeOrphaned {
				_ = unix.Unlinkat(t.dir, name, 0)
			}
		}
	}
}
