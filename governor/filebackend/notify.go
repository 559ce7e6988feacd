package filebackend

import (
	"context"
	"errors"
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/governor-dev/governor/governor"
)

// listener waits on one waiter's wake-up pipe.
type listener struct {
	b    *Backend
	dir  int // the resource directory, held open to unlink the pipe
	name string
	f    *os.File
	done chan struct{}
	once sync.Once
}

// Notify implements governor.Backend. It creates waiter id's wake-up pipe
// (wait.ID in the resource's directory) and listens on it through the
// runtime's poller; only a grant to id writes to it. If the pipe cannot
// be made, the channel never fires and the caller's bounded re-check
// does the work: so too when the resource's lock is not had before ctx
// ends. The stop function removes the pipe; call it once the waiter is
// granted or has given up.
func (b *Backend) Notify(ctx context.Context, key governor.Key, id string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	l, err := b.listen(ctx, key, id, ch)
	if err != nil {
		return ch, func() {}
	}
	return ch, l.stop
}

func (b *Backend) listen(ctx context.Context, key governor.Key, id string, ch chan<- struct{}) (*listener, error) {
	if b.isClosed() {
		return nil, governor.ErrClosed
	}
	// Made under the lock, so that no sweep sees the pipe before it is
	// open and takes it for a dead waiter's.
	dir, unlock, err := b.lockResource(ctx, key, true, false)
	if err != nil {
		return nil, err
	}
	defer unlock()
	name := waitPrefix + escape(id)
	path := b.projectPath(key.Project) + "/" + escape(key.Resource)
	if err := mkfifoat(dir, path, name); err != nil && err != unix.EEXIST {
		unix.Close(dir)
		return nil, err
	}
	// Read-write, so that the pipe always has a writer and never reads
	// end-of-file; non-blocking, so that the poller waits on it.
	fd, err := openat(dir, name, unix.O_RDWR|unix.O_NONBLOCK, 0)
	if err != nil {
		_ = unix.Unlinkat(dir, name, 0)
		unix.Close(dir)
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
		unix.Close(fd)
		unix.Close(dir)
		return nil, errors.New("wake-up pipe is not a pipe")
	}
	if err := share(dir, fd, sharedFileMode); err != nil {
		unix.Close(fd)
		_ = unix.Unlinkat(dir, name, 0)
		unix.Close(dir)
		return nil, err
	}
	l := &listener{b: b, dir: dir, name: name, f: os.NewFile(uintptr(fd), name), done: make(chan struct{})}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		_ = unix.Unlinkat(dir, name, 0)
		l.f.Close()
		unix.Close(dir)
		return nil, governor.ErrClosed
	}
	b.waiters[l] = struct{}{}
	b.mu.Unlock()
	go l.run(ch)
	return l, nil
}

func (l *listener) run(ch chan<- struct{}) {
	defer close(l.done)
	buf := make([]byte, 16)
	for {
		n, err := l.f.Read(buf)
		if n > 0 {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
		if err != nil {
			return
		}
	}
}

// stop removes the pipe before closing it: a pipe that exists with no
// reader means a dead waiter, and a live one must never look like that.
func (l *listener) stop() {
	l.once.Do(func() {
		_ = unix.Unlinkat(l.dir, l.name, 0)
		l.f.Close()
		<-l.done
		unix.Close(l.dir)
		l.b.mu.Lock()
		delete(l.b.waiters, l)
		l.b.mu.Unlock()
	})
}
