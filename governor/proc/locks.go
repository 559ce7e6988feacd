package proc

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// LockKind is how a file lock was taken, as /proc/locks names it.
type LockKind string

// The kinds of locks a process takes on a file.
const (
	Flock LockKind = "FLOCK"  // flock(2)
	Posix LockKind = "POSIX"  // fcntl(F_SETLK), owned by a process
	OFD   LockKind = "OFDLCK" // fcntl(F_OFD_SETLK), owned by an open file: its PID is -1
)

// LockMode is whether a lock is shared (LockRead) or exclusive (LockWrite).
type LockMode string

// The modes /proc/locks shows for locks held.
const (
	LockRead  LockMode = "READ"
	LockWrite LockMode = "WRITE"
)

// Lock is a file lock held, one line of /proc/locks. Major and Minor are
// the device of the file's file system as the kernel shows it, which is
// not always what stat(2) says (btrfs subvolumes, overlayfs). PID is 0
// for a holder in another PID namespace, -1 for an OFD lock.
type Lock struct {
	Kind         LockKind
	Mode         LockMode
	PID          int
	Major, Minor uint32
	Inode        uint64
}

// ParseLocks returns the locks that data, the content of /proc/locks,
// shows held ("1: FLOCK  ADVISORY  WRITE 15133 fe:00:10011890 0 EOF").
// A blocked request ("1: -> FLOCK ...") holds nothing and is left out,
// and so are leases, delegations and other kinds than Flock, Posix and
// OFD. A line out of that format is left out too, and the error names
// the first such line; the locks of the other lines are returned either
// way.
func ParseLocks(data []byte) ([]Lock, error) {
	var locks []Lock
	var bad []string
	n := 0
	for line := range strings.Lines(string(data)) {
		n++
		l, ok, err := parseLock(line)
		if err != nil {
			bad = append(bad, fmt.Sprintf("line %d %q: %v", n, strings.TrimSpace(line), err))
		} else if ok {
			locks = append(locks, l)
		}
	}
	switch len(bad) {
	case 0:
		return locks, nil
	case 1:
		return locks, fmt.Errorf("proc: /proc/locks: %s", bad[0])
	}
	return locks, fmt.Errorf("proc: /proc/locks: %s (and %d more lines out of format)", bad[0], len(bad)-1)
}

// parseLock parses one line of /proc/locks: ok is false for a line that
// shows no lock held (a blocked request, another kind of lock, a blank).
func parseLock(line string) (l Lock, ok bool, err error) {
	fs := strings.Fields(line)
	if len(fs) == 0 || len(fs) > 1 && fs[1] == "->" {
		return Lock{}, false, nil
	}
	// id: kind ADVISORY mode pid maj:min:inode start end
	if len(fs) < 2 || !strings.HasSuffix(fs[0], ":") {
		return Lock{}, false, errors.New(`want "ID: KIND ..."`)
	}
	switch l.Kind = LockKind(fs[1]); l.Kind {
	case Flock, Posix, OFD:
	default:
		return Lock{}, false, nil
	}
	if len(fs) != 8 {
		return Lock{}, false, fmt.Errorf("%d fields, want 8", len(fs))
	}
	switch l.Mode = LockMode(fs[3]); l.Mode {
	case LockRead, LockWrite:
	default:
		return Lock{}, false, fmt.Errorf("mode %q, want READ or WRITE", fs[3])
	}
	if l.PID, err = strconv.Atoi(fs[4]); err != nil {
		return Lock{}, false, fmt.Errorf("pid %q is not a number", fs[4])
	}
	dev := strings.Split(fs[5], ":")
	if len(dev) != 3 {
		return Lock{}, false, fmt.Errorf("file %q, want MAJOR:MINOR:INODE", fs[5])
	}
	ma, err1 := strconv.ParseUint(dev[0], 16, 32)
	mi, err2 := strconv.ParseUint(dev[1], 16, 32)
	ino, err3 := strconv.ParseUint(dev[2], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return Lock{}, false, fmt.Errorf("file %q, want MAJOR:MINOR:INODE (hex, hex, decimal)", fs[5])
	}
	l.Major, l.Minor, l.Inode = uint32(ma), uint32(mi), ino
	return l, true, nil
}

// locksReads is how many times LocksWith reads /proc/locks.
const locksReads = 3

// LocksWith reads the file locks (Locks) until a read shows what found
// looks for, up to three times, and returns that read, or the last one
// with its error. The kernel hands /proc/locks out a page per read(2)
// and finds each page by its position in the list, so a lock listed
// before a line that goes between two pages moves that line into the
// page already read, and the read misses it (1 read in 3,000 of 200
// locks with four goroutines taking and dropping others; two CI runs at
// once named a running lock holder "another process"). A line that is
// there is shown by one of three reads unless locks churn ahead of it
// all the while. Where the locks cannot be read at all
// (errors.ErrUnsupported: macOS), it returns at once.
func LocksWith(found func([]Lock) bool) ([]Lock, error) {
	return locksWith(Locks, found)
}

func locksWith(read func() ([]Lock, error), found func([]Lock) bool) ([]Lock, error) {
	var locks []Lock
	var err error
	for range locksReads {
		locks, err = read()
		if errors.Is(err, errors.ErrUnsupported) || found(locks) {
			break
		}
	}
	return locks, err
}

// HoldsExclusiveFlock reports whether process pid holds an exclusive
// flock(2), as /proc/locks shows it (LocksWith: read again while it does
// not); errors.ErrUnsupported where it cannot be read (macOS). Meant for
// a stopped process, whose own locks stay as they are.
func HoldsExclusiveFlock(pid int) (bool, error) {
	held := false
	_, err := LocksWith(func(locks []Lock) bool {
		for _, l := range locks {
			if l.Kind == Flock && l.Mode == LockWrite && l.PID == pid {
				held = true
			}
		}
		return held
	})
	if held {
		return true, nil
	}
	return false, err
}
