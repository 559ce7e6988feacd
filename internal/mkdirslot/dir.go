package mkdirslot

import (
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"

	"github.com/governor-dev/governor/governor/fstrust"
)

// ErrUntrustedDir is wrapped by the error of a DIR that another user than
// root or you could change: its slot.d could be swapped for one of theirs.
var ErrUntrustedDir = errors.New("mkdirslot: untrusted lock directory")

// openDir opens DIR (making it, 0755, when create is set and it is
// missing) and checks, on the opened directory, that only root or you can
// add, remove or rename its entries (fstrust.DirProblem). A DIR that is a
// symbolic link is followed only when the link is root's or yours: another
// user's link would choose the directory. Every later step works relative
// to the returned descriptor, so a DIR renamed or replaced meanwhile is
// not followed. A missing DIR (without create) is fs.ErrNotExist.
func openDir(dir string, create bool) (int, error) {
	euid := os.Geteuid()
	if create {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return -1, fmt.Errorf("mkdirslot: making the lock directory: %w", err)
		}
	}
	var lst unix.Stat_t
	if err := unix.Lstat(dir, &lst); err == nil && lst.Mode&unix.S_IFMT == unix.S_IFLNK && lst.Uid != 0 && int(lst.Uid) != euid {
		return -1, fmt.Errorf("%w: %s is a symbolic link owned by uid %d, neither root nor you (uid %d): that user chose the directory it names; "+
			"point HEAVY_LOCK_DIR (or mkdir_lock) at the real directory", ErrUntrustedDir, dir, lst.Uid, euid)
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return -1, &os.PathError{Op: "mkdirslot: open lock directory", Path: dir, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, &os.PathError{Op: "mkdirslot: stat lock directory", Path: dir, Err: err}
	}
	if why := fstrust.DirProblem(st.Uid, uint32(st.Mode), euid); why != "" {
		unix.Close(fd)
		return -1, fmt.Errorf("%w: %s is %s: another user could swap its %s for links of theirs; "+
			"refusing it: chmod go-w %s (or chmod +t %s, as /tmp, to share it between users), or use a directory of your own",
			ErrUntrustedDir, dir, why, SlotName, dir, dir)
	}
	return fd, nil
}

// openSlotDir opens name, a directory in dfd, without following a
// symbolic link.
func openSlotDir(dfd int, name string) (int, error) {
	return unix.Openat(dfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
}

// createFile writes data to a new file name in dfd: O_EXCL, so neither an
// existing file nor a symbolic link is ever written through.
func createFile(dfd int, name string, data []byte) error {
	fd, err := unix.Openat(dfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), name)
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// errNotRead says why a file of slot.d was not read.
type errNotRead string

func (e errNotRead) Error() string { return string(e) }

// readSmall reads at most max bytes of name in dfd: never through a
// symbolic link (O_NOFOLLOW), never blocking (O_NONBLOCK: a FIFO put there
// must not hang its reader), only a regular file owned by owner (slot.d's
// owner, who wrote it: a hard link to someone else's file is not read).
// It reports whether the file held more than max bytes. A missing file is
// fs.ErrNotExist; a refused one an errNotRead saying why.
func readSmall(dfd int, name string, owner uint32, max int) (string, bool, error) {
	fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, unix.ELOOP):
		return "", false, errNotRead(name + " is a symbolic link (not followed)")
	case err != nil:
		return "", false, err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return "", false, err
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return "", false, errNotRead(name + " is not a regular file (not read)")
	case st.Uid != owner:
		return "", false, errNotRead(fmt.Sprintf("%s is owned by uid %d, not by slot.d's owner uid %d (not read)", name, st.Uid, owner))
	}
	b, err := io.ReadAll(io.LimitReader(f, int64(max)+1))
	if err != nil {
		return "", false, err
	}
	if len(b) > max {
		return string(b[:max]), true, nil
	}
	return string(b), false, nil
}

// removeAt removes name in dfd and, if it is a directory, everything in
// it, never following a symbolic link.
func removeAt(dfd int, name string) error {
	err := unix.Unlinkat(dfd, name, 0)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	if !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EPERM) {
		return err
	}
	sfd, err := openSlotDir(dfd, name)
	if err != nil {
		return err
	}
	d := os.NewFile(uintptr(sfd), name)
	names, err := d.Readdirnames(-1)
	if err == nil {
		for _, n := range names {
			if err = removeAt(sfd, n); err != nil {
				break
			}
		}
	}
	d.Close()
	if err != nil {
		return err
	}
	return unix.Unlinkat(dfd, name, unix.AT_REMOVEDIR)
}
