package filebackend

import (
	"context"
	"os"

	"golang.org/x/sys/unix"

	"github.com/governor-dev/governor/governor"
)

var _ governor.LeaseProver = (*Backend)(nil)

// LeaseAlive implements governor.LeaseProver: lease id of key is proven
// alive while its lease file is locked — by this Backend, or by any
// process that inherited the file (the command tree of a `governor run`
// whose governor and watchdog were killed). That proof wins over a
// declared pid found dead. An error tells nothing either way.
func (b *Backend) LeaseAlive(ctx context.Context, key governor.Key, id string) (bool, error) {
	if b.holds(key, id) && !b.isClosed() {
		return true, nil
	}
	return within(ctx, b, key, section{}, func(t *tx) (bool, error) {
		h := t.st.holder(id)
		return h != nil && h.Proof && !leaseDead(t.dir, leasePrefix+escape(id)), nil
	})
}

// attach opens h's lease file and holds a shared lock on it for as long
// as this Backend holds the lease: the proof that its owner lives.
// Failing that, the lease lives by its TTL alone.
func (t *tx) attach(h *holder) {
	b := t.b
	ref := leaseRef{t.key, h.ID}
	b.mu.Lock()
	_, held := b.leases[ref]
	closed := b.closed
	b.mu.Unlock()
	if held {
		if !h.Proof {
			h.Proof = true
			t.dirty = true
		}
		return
	}
	if closed {
		return
	}
	name := leasePrefix + escape(h.ID)
	fd, err := openat(t.dir, name, unix.O_RDWR|unix.O_CREAT, 0o600)
	if err != nil {
		return
	}
	if share(t.dir, fd, sharedFileMode) != nil {
		unix.Close(fd)
		return
	}
	if err := flock(fd, unix.LOCK_SH|unix.LOCK_NB); err != nil {
		unix.Close(fd)
		return
	}
	f := os.NewFile(uintptr(fd), b.projectPath(t.key.Project)+"/"+escape(t.key.Resource)+"/"+name)
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		f.Close()
		return
	}
	b.leases[ref] = f
	b.mu.Unlock()
	h.Proof = true
	t.dirty = true
}

func (b *Backend) holds(key governor.Key, id string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.leases[leaseRef{key, id}]
	return ok
}

// forget drops this Backend's hold on a lease that ended.
func (b *Backend) forget(key governor.Key, id string) {
	b.mu.Lock()
	f := b.leases[leaseRef{key, id}]
	delete(b.leases, leaseRef{key, id})
	b.mu.Unlock()
	if f != nil {
		f.Close()
	}
}

// LeaseFile returns the open lease file of a lease that this Backend was
// granted (nil if it holds none by that id). While any process holds the
// file's open file description, the lease counts as alive and is never
// reclaimed as dead (it still expires without renewals). `governor run`
// passes it to its child (exec.Cmd.ExtraFiles) so that the slot stays
// proven alive while any descendant that inherited it lives, even if
// governor itself is killed. The file belongs to the Backend, which
// closes it when the lease ends; do not close it, and pass it on before
// releasing the lease.
func (b *Backend) LeaseFile(key governor.Key, id string) *os.File {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.leases[leaseRef{key, id}]
}
