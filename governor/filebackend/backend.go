package filebackend

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/fstrust"
	"github.com/governor-dev/governor/governor/proc"
	"github.com/governor-dev/governor/governor/statedir"
)

// closeTimeout bounds the critical sections Close and Notify run on their
// own context.
const closeTimeout = 5 * time.Second

// Options configure a Backend. The zero value means the defaults.
type Options struct {
	// Clock returns the time elapsed since boot on a clock that every
	// process of the machine shares and that never goes back; expiries
	// are measured on it. Default: CLOCK_MONOTONIC, the clock of Go's
	// monotonic time readings, which holders use to judge their own
	// leases (see governor.Lease). Tests inject one to move time; every
	// Backend on one state dir must then share it.
	Clock func() time.Duration
	// Wall returns the time of day that spend budgets' windows are
	// measured on (budget.go). Default: time.Now. Tests inject one.
	Wall func() time.Time
}

// DefaultDir is the state dir to use when none is configured:
// $GOVERNOR_DIR, else $XDG_STATE_HOME/governor, else
// ~/.local/state/governor. It is "" only when none of them can be told.
func DefaultDir() string {
	if d := os.Getenv("GOVERNOR_DIR"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return StateDirUnder(d)
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return ""
	}
	return StateDirUnder(filepath.Join(home, ".local", "state"))
}

// RootDir is the state dir of a root run whose home is not root's.
const RootDir = statedir.Root

// StateDirUnder is the default state dir under base: see
// statedir.Under.
func StateDirUnder(base string) string { return statedir.Under(base) }

// Backend keeps governor's state in files under one directory. It is
// safe for concurrent use; several Backends on one directory, in one
// process or many, behave as separate processes would.
type Backend struct {
	dir   string
	dev   uint64 // of dir when New checked it
	ino   uint64
	clock func() time.Duration
	wall  func() time.Time // for budgets
	boot  string           // kernel boot id

	mu      sync.Mutex
	closed  bool
	leases  map[leaseRef]*os.File
	waiters map[*listener]struct{}
	cut     map[governor.Key]time.Duration // see Backend.ended
	turns   map[governor.Key]*turnOf       // see Backend.lock
	// spends holds the spend reservations this Backend made and has not
	// settled (spendRef): renewed with the lease of the same id.
	spends sync.Map
}

type leaseRef struct {
	key governor.Key
	id  string
}

// Backend implements the contract and its optional rates and budgets
// (the conformance cases of a capability skip on a backend without it,
// so a signature that drifted must not compile).
var (
	_ governor.Backend       = (*Backend)(nil)
	_ governor.RateBackend   = (*Backend)(nil)
	_ governor.BudgetBackend = (*Backend)(nil)
)

// New opens the state dir dir ("" means DefaultDir()), creating it with
// mode 0700 if it does not exist. It fails, creating nothing more, when
// dir is a symlink, is not a directory, is owned by another user or is
// writable by group or others, or when one of its parents is writable by
// another user than root or you (a sticky dir, as /tmp, is
// fine): that user could swap the state dir.
//
// A shared state dir is one that is setgid (mode 2770, made by root with
// install -d -m 2770 -g GROUP DIR): every member of its group uses it,
// so that their processes share its slots. Its owner must be root or
// you, you must be in its group, and nobody else may write it; files are
// made 0660 and subdirectories 2770 in it, whatever the umask.
//
// Each critical section checks that the state dir is still the one New
// checked (same device and inode).
func New(dir string, opts Options) (*Backend, error) {
	if dir == "" {
		dir = DefaultDir()
	}
	if dir == "" {
		return nil, errors.New("governor: file backend: no state dir: set GOVERNOR_DIR or HOME")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("governor: file backend: state dir %s: %w", dir, err)
	}
	if _, err := os.Lstat(abs); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(abs, 0o700); err != nil {
			return nil, fmt.Errorf("governor: file backend: create state dir: %w", err)
		}
	}
	st, err := checkDir(abs)
	if err != nil {
		return nil, err
	}
	if err := checkParents(abs); err != nil {
		return nil, err
	}
	b := &Backend{dir: abs, dev: uint64(st.Dev), ino: uint64(st.Ino), clock: opts.Clock, wall: opts.Wall, boot: proc.BootID(),
		leases: map[leaseRef]*os.File{}, waiters: map[*listener]struct{}{}}
	if b.clock == nil {
		var ts unix.Timespec
		if err := unix.ClockGettime(machineClockID, &ts); err != nil {
			return nil, fmt.Errorf("governor: file backend: %s: %w", machineClockName, err)
		}
		b.clock = machineClock
	}
	if b.wall == nil {
		b.wall = time.Now
	}
	return b, nil
}

func checkDir(dir string) (*unix.Stat_t, error) {
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return nil, fmt.Errorf("governor: file backend: state dir %s: %w", dir, err)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		target, _ := os.Readlink(dir)
		return nil, fmt.Errorf("governor: file backend: state dir %s is a symlink (to %s); refusing it: "+
			"point --dir or GOVERNOR_DIR at the real directory", dir, target)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return nil, fmt.Errorf("governor: file backend: state dir %s is not a directory", dir)
	}
	perm := uint32(st.Mode) & 0o7777
	me := os.Geteuid()
	if st.Mode&unix.S_ISGID != 0 {
		// Shared: owned by root or you, your group's, nobody else's.
		if st.Uid != 0 && int(st.Uid) != me {
			return nil, fmt.Errorf("governor: file backend: shared state dir %s is owned by uid %d, neither root nor you (uid %d); refusing it: "+
				"a shared dir must be made by root: install -d -m 2770 -g GROUP %s", dir, st.Uid, me, dir)
		}
		if perm&0o007 != 0 {
			return nil, fmt.Errorf("governor: file backend: shared state dir %s is open to users outside its group (mode %04o); refusing it: chmod 2770 %s",
				dir, perm, dir)
		}
		if !inGroup(int(st.Gid)) {
			return nil, fmt.Errorf("governor: file backend: shared state dir %s belongs to group %d, and you are not in it; "+
				"ask root to add you (usermod -aG GROUP USER, then log in again) or use a dir of your own", dir, st.Gid)
		}
		return &st, nil
	}
	if int(st.Uid) != me {
		return nil, fmt.Errorf("governor: file backend: state dir %s is owned by uid %d, not by you (uid %d); refusing it: "+
			"use a directory of your own, or a shared one (setgid, mode 2770: see docs/security.md)", dir, st.Uid, me)
	}
	if perm&0o022 != 0 {
		return nil, fmt.Errorf("governor: file backend: state dir %s is writable by others (mode %04o); refusing it: chmod 700 %s",
			dir, perm, dir)
	}
	return &st, nil
}

func inGroup(gid int) bool {
	if os.Getegid() == gid || os.Geteuid() == 0 {
		return true
	}
	groups, _ := os.Getgroups()
	for _, g := range groups {
		if g == gid {
			return true
		}
	}
	return false
}

// checkParents refuses a state dir that someone other than root or you
// could replace: a parent (as written, and with symlinks resolved) that
// fails fstrust.DirProblem (owned by another user, or writable by group
// or others without the sticky bit).
func checkParents(dir string) error {
	me := os.Geteuid()
	paths := []string{filepath.Dir(dir)}
	if real, err := filepath.EvalSymlinks(filepath.Dir(dir)); err == nil && real != paths[0] {
		paths = append(paths, real)
	}
	for _, start := range paths {
		for p := start; ; p = filepath.Dir(p) {
			var st unix.Stat_t
			if err := unix.Lstat(p, &st); err != nil {
				return fmt.Errorf("governor: file backend: state dir %s: parent %s: %w", dir, p, err)
			}
			if st.Mode&unix.S_IFMT == unix.S_IFDIR {
				if why := fstrust.DirProblem(st.Uid, uint32(st.Mode), me); why != "" {
					return fmt.Errorf("governor: file backend: state dir %s: its parent %s is %s: another user could replace the state dir; "+
						"refusing it: use a dir whose parents only root or you can write (chmod go-w %s, or a sticky dir such as /tmp)", dir, p, why, p)
				}
			}
			if p == filepath.Dir(p) {
				break
			}
		}
	}
	return nil
}

// machineClock reads CLOCK_MONOTONIC (CLOCK_UPTIME_RAW on macOS; see
// machineClockID): shared by every process of the machine, never set,
// and stopped during suspend exactly as the clock holders judge their
// leases on. CLOCK_BOOTTIME would run on through a
// suspend, so that after resuming the backend could expire a lease and
// grant its slot before the holder's own clock told it the lease was
// lost.
func machineClock() time.Duration {
	var ts unix.Timespec
	_ = unix.ClockGettime(machineClockID, &ts) // checked in New
	return time.Duration(ts.Nano())
}

// Dir returns the state dir, absolute.
func (b *Backend) Dir() string { return b.dir }

func (b *Backend) now() clockNow {
	return clockNow{boot: int64(b.clock()), wall: time.Now().Round(0)}
}

func (b *Backend) isClosed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}

// tx is one critical section on one resource: its directory, its lock,
// its state as read, and the changes to write.

// Close implements governor.Backend. Leases still held are left to
// expire: their lease files are given up, and their records marked as
// unproven under the lock first, so that they are not taken for dead.
// Notifications stop. It returns the first error.
func (b *Backend) Close() error {
	leases := b.shut()
	var first error
	for ref, f := range leases {
		if err := b.detach(ref); err != nil && first == nil {
			first = err
		}
		f.Close()
	}
	return first
}

// shut marks b closed, stops its waiters' notifications and returns the
// lease files it held (none when it was closed already), for the caller
// to let go of.
func (b *Backend) shut() map[leaseRef]*os.File {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	leases := b.leases
	b.leases = map[leaseRef]*os.File{}
	var ls []*listener
	for l := range b.waiters {
		ls = append(ls, l)
	}
	b.mu.Unlock()
	for _, l := range ls {
		l.stop()
	}
	return leases
}

// detach marks a lease's record as without lease-file proof, so that it
// lives by its TTL alone once this process lets go of the file.
func (b *Backend) detach(ref leaseRef) error {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	return b.do(ctx, ref.key, section{closing: true}, func(t *tx) error {
		if h := t.st.holder(ref.id); h != nil && h.Proof {
			h.Proof = false
			t.dirty = true
			if err := t.commit(); err != nil {
				return err
			}
		}
		_ = unix.Unlinkat(t.dir, leasePrefix+escape(ref.id), 0)
		return nil
	})
}
