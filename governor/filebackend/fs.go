package filebackend

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/governor-dev/governor/governor/proc"
)

// Names inside a resource directory.
const (
	lockName    = "lock"
	stateName   = "state"
	tempName    = "state.tmp"
	statsName   = "stats"
	statsTemp   = "stats.tmp"
	leasePrefix = "lease."
	waitPrefix  = "wait."
)

// maxEscaped bounds an escaped name so that it fits NAME_MAX (255) with
// the longest prefix ("lease.").
const maxEscaped = 240

const hashPrefix = "#"

func safeByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
}

// escape turns any string into a file name, injectively: bytes outside
// [A-Za-z0-9._-], '%' itself and a leading '.' become %XX (upper case);
// a result longer than maxEscaped becomes "#" + hex SHA-256 of the name,
// which no escaped name starts with.
func escape(s string) string {
	const hexdig = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if safeByte(c) && !(c == '.' && i == 0) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexdig[c>>4])
		b.WriteByte(hexdig[c&15])
		if b.Len() > maxEscaped {
			break
		}
	}
	if b.Len() > maxEscaped || s == "" {
		sum := sha256.Sum256([]byte(s))
		return hashPrefix + hex.EncodeToString(sum[:])
	}
	return b.String()
}

// unescape reverses escape. It reports false for hashed names and for
// names escape never produces.
func unescape(name string) (string, bool) {
	if name == "" || strings.HasPrefix(name, hashPrefix) {
		return "", false
	}
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		if i+2 >= len(name) {
			return "", false
		}
		v, err := hex.DecodeString(name[i+1 : i+3])
		if err != nil {
			return "", false
		}
		b.WriteByte(v[0])
		i += 2
	}
	s := b.String()
	if escape(s) != name {
		return "", false
	}
	return s, true
}

// openat opens name relative to dirfd, never following a symlink and
// never leaking the descriptor into exec'd children.
func openat(dirfd int, name string, flags int, mode uint32) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, flags|unix.O_CLOEXEC|unix.O_NOFOLLOW, mode)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

func flock(fd, how int) error {
	for {
		err := unix.Flock(fd, how)
		if err != unix.EINTR {
			return err
		}
	}
}

// subdir opens directory name in parent, making it (0700, or 02770 in a
// shared state dir) if create is set.
func subdir(parent int, name string, create bool) (int, error) {
	fd, err := openat(parent, name, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err == unix.ENOENT && create {
		if err := unix.Mkdirat(parent, name, 0o700); err != nil && err != unix.EEXIST {
			return -1, err
		}
		fd, err = openat(parent, name, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err == nil {
			if err = share(parent, fd, sharedDirMode); err != nil {
				unix.Close(fd)
				return -1, err
			}
		}
	}
	return fd, err
}

// Modes in a shared state dir (see New): every member of its group reads
// and writes every file, and subdirectories keep the group (setgid).
const (
	sharedFileMode = 0o660
	sharedDirMode  = 0o2770
)

// isShared reports whether directory fd is part of a shared state dir:
// it is setgid, as New requires of a shared one and refuses otherwise.
func isShared(fd int) bool {
	var st unix.Stat_t
	return unix.Fstat(fd, &st) == nil && st.Mode&unix.S_ISGID != 0
}

// share gives fd, a file or directory in directory dir, the shared mode
// perm when dir is shared and fd is ours and lacks it: whatever the
// umask took away when it was made.
func share(dir, fd int, perm uint32) error {
	if !isShared(dir) {
		return nil
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if int(st.Uid) != os.Geteuid() || uint32(st.Mode)&0o7777 == perm {
		return nil
	}
	return unix.Fchmod(fd, perm)
}

// errNoState: the resource has no directory yet (and was not to be
// created).
var errNoState = errors.New("no state")

func (b *Backend) projectPath(project string) string {
	return b.dir + "/" + escape(project)
}

// openResource opens the directory of one resource, walking from the
// state dir with O_NOFOLLOW at every step. Without create, a missing
// directory is errNoState.
func (b *Backend) openResource(project, resource string, create bool) (int, error) {
	root, err := b.openRoot()
	if err != nil {
		return -1, err
	}
	defer unix.Close(root)
	proj, err := subdir(root, escape(project), create)
	if err == unix.ENOENT && !create {
		return -1, errNoState
	}
	if err != nil {
		return -1, b.dirError(b.projectPath(project), err)
	}
	defer unix.Close(proj)
	fd, err := subdir(proj, escape(resource), create)
	if err == unix.ENOENT && !create {
		return -1, errNoState
	}
	if err != nil {
		return -1, b.dirError(b.projectPath(project)+"/"+escape(resource), err)
	}
	return fd, nil
}

// openRoot opens the state dir and checks that it is still the directory
// New checked (same device and inode): one fstat of the open descriptor.
func (b *Backend) openRoot() (int, error) {
	root, err := openat(unix.AT_FDCWD, b.dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return -1, b.dirError(b.dir, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(root, &st); err != nil {
		unix.Close(root)
		return -1, b.dirError(b.dir, err)
	}
	if uint64(st.Dev) != b.dev || uint64(st.Ino) != b.ino {
		unix.Close(root)
		return -1, fmt.Errorf("governor: file backend: state dir %s was replaced after governor checked it "+
			"(device/inode %d/%d, now %d/%d); refusing it: check who can write its parent, then start again",
			b.dir, b.dev, b.ino, uint64(st.Dev), uint64(st.Ino))
	}
	return root, nil
}

func (b *Backend) dirError(path string, err error) error {
	if err == unix.ELOOP || err == unix.ENOTDIR {
		return fmt.Errorf("governor: file backend: %s is a symlink or not a directory; governor never follows symlinks in its state dir: remove it", path)
	}
	return fmt.Errorf("governor: file backend: open %s: %w", path, err)
}

// lockDir takes the exclusive lock of a resource directory and returns
// the lock file's descriptor; closing it unlocks. Waiting honours ctx:
// a waiter that gives up returns a *LockWaitError (errors.Is ctx's
// error) that Backend.lock completes, and leaves a goroutine that closes
// the descriptor as soon as the lock comes.
func lockDir(ctx context.Context, dir int) (int, error) {
	fd, err := openat(dir, lockName, unix.O_RDWR|unix.O_CREAT, 0o600)
	if err != nil {
		return -1, err
	}
	if err := share(dir, fd, sharedFileMode); err != nil {
		unix.Close(fd)
		return -1, err
	}
	err = flock(fd, unix.LOCK_EX|unix.LOCK_NB)
	if err == nil {
		return fd, nil
	}
	if err != unix.EWOULDBLOCK {
		unix.Close(fd)
		return -1, err
	}
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- flock(fd, unix.LOCK_EX) }()
	select {
	case err := <-done:
		if err != nil {
			unix.Close(fd)
			return -1, err
		}
		return fd, nil
	case <-ctx.Done():
		w := &LockWaitError{Waited: time.Since(start), Err: ctx.Err(), file: fileOf(fd)}
		go func() {
			<-done
			unix.Close(fd)
		}()
		return -1, w
	}
}

// writeFileAtomic replaces name in dir by data, synced: it writes
// tempName, syncs it and renames it over name (replaceFile).
func writeFileAtomic(dir int, name string, data []byte) error {
	return replaceFile(dir, name, tempName, data, true)
}

// replaceFile replaces name in dir by data: it writes tmp, syncs it when
// sync is set, and renames it over name. On failure it removes tmp. The
// caller holds the directory's lock, so tmp has a single writer: one
// found there is stale (a killed writer's) or planted (in a shared dir,
// by another member: a FIFO would block the open, with the lock held), so
// it is removed and a new one made with O_EXCL, opened without blocking,
// and checked to be a regular file. Without sync, a power loss may leave
// name empty or torn: only for files no guarantee needs (statsName).
func replaceFile(dir int, name, tmp string, data []byte, sync bool) error {
	if err := unix.Unlinkat(dir, tmp, 0); err != nil && err != unix.ENOENT {
		return fmt.Errorf("remove the stale %s: %w", tmp, err)
	}
	fd, err := openat(dir, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NONBLOCK, 0o600)
	if err != nil {
		return err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		if err == nil {
			err = fmt.Errorf("%s is not a regular file (mode %o)", tmp, st.Mode)
		}
		return err
	}
	if err := share(dir, fd, sharedFileMode); err != nil {
		unix.Close(fd)
		_ = unix.Unlinkat(dir, tmp, 0)
		return err
	}
	for len(data) > 0 && err == nil {
		var n int
		n, err = unix.Write(fd, data)
		if err == unix.EINTR {
			err = nil
		}
		if n > 0 {
			data = data[n:]
		}
	}
	if err == nil && sync {
		err = syncData(fd)
	}
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(dir, tmp, dir, name)
	}
	if err != nil {
		_ = unix.Unlinkat(dir, tmp, 0)
	}
	return err
}

// readFile reads a regular file name in dir. A missing file is
// os.ErrNotExist.
func readFile(dir int, name string) ([]byte, error) {
	fd, err := openat(dir, name, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err == unix.ENOENT {
		return nil, os.ErrNotExist
	}
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, errors.New("not a regular file")
	}
	return proc.ReadFD(fd, int(st.Size)+1)
}

// leaseDead reports whether the owner of lease file name is proven dead:
// the file exists and an exclusive lock on it can be taken, so nobody
// holds the shared lock its owner keeps while it lives. The caller holds
// the resource lock, and removes the file once the state no longer lists
// the lease.
func leaseDead(dir int, name string) bool {
	fd, err := openat(dir, name, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return false // missing or unreadable: no proof
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return false
	}
	// Held: alive. An error: no proof.
	return flock(fd, unix.LOCK_EX|unix.LOCK_NB) == nil
}

// pipeState is what opening a waiter's pipe for writing tells.
type pipeState int

const (
	pipeMissing  pipeState = iota // no pipe (or not openable): no proof either way
	pipeListened                  // someone has it open: the waiter lives
	pipeOrphaned                  // nobody has it open: its waiter is dead
)

// pokePipe opens pipe name without blocking and, if wake is set and a
// reader has it open, writes one byte to wake it.
func pokePipe(dir int, name string, wake bool) pipeState {
	fd, err := openat(dir, name, unix.O_WRONLY|unix.O_NONBLOCK, 0)
	if err == unix.ENXIO {
		return pipeOrphaned
	}
	if err != nil {
		return pipeMissing
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
		return pipeMissing
	}
	if wake {
		// EAGAIN: the pipe is full of earlier wake-ups; one is enough.
		_, _ = unix.Write(fd, []byte{1})
	}
	return pipeListened
}
