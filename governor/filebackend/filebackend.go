package filebackend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/proc"
	"github.com/governor-dev/governor/internal/fstrust"
)

// holdersInRefusal caps the holders a refusal reports, as in Redis.
const holdersInRefusal = 16

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
const RootDir = "/run/governor"

// StateDirUnder is the default state dir under base ($XDG_STATE_HOME or
// ~/.local/state): base/governor, except for root when base (or its
// nearest existing parent) is not owned by root, as a user's HOME kept by
// sudo is: then RootDir, so that root never makes root-owned dirs in a
// home that breaks its user's own governor.
func StateDirUnder(base string) string {
	if os.Geteuid() == 0 {
		for p := base; ; p = filepath.Dir(p) {
			var st unix.Stat_t
			if err := unix.Stat(p, &st); err == nil {
				if st.Uid != 0 {
					return RootDir
				}
				break
			}
			if p == filepath.Dir(p) {
				break
			}
		}
	}
	return filepath.Join(base, "governor")
}

// Backend keeps governor's state in files under one directory. It is
// safe for concurrent use; several Backends on one directory, in one
// process or many, behave as separate processes would.
type Backend struct {
	dir   string
	dev   uint64 // of dir when New checked it
	ino   uint64
	clock func() time.Duration
	boot  string // kernel boot id

	mu      sync.Mutex
	closed  bool
	leases  map[leaseRef]*os.File
	waiters map[*listener]struct{}
}

type leaseRef struct {
	key governor.Key
	id  string
}

var _ governor.Backend = (*Backend)(nil)

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
	b := &Backend{dir: abs, dev: uint64(st.Dev), ino: uint64(st.Ino), clock: opts.Clock, boot: proc.BootID(),
		leases: map[leaseRef]*os.File{}, waiters: map[*listener]struct{}{}}
	if b.clock == nil {
		var ts unix.Timespec
		if err := unix.ClockGettime(machineClockID, &ts); err != nil {
			return nil, fmt.Errorf("governor: file backend: %s: %w", machineClockName, err)
		}
		b.clock = machineClock
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
			"use a directory of your own, or a shared one (setgid, mode 2770: see README)", dir, st.Uid, me)
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
type tx struct {
	b      *Backend
	key    governor.Key
	dir    int
	lock   int
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

// begin opens and locks key's directory and reads its state. Without
// create, a resource that has no directory is errNoState.
func (b *Backend) begin(ctx context.Context, key governor.Key, create bool) (*tx, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	dir, err := b.openResource(key.Project, key.Resource, create)
	if err != nil {
		return nil, err
	}
	lock, err := b.lock(ctx, dir, key)
	if err != nil {
		unix.Close(dir)
		return nil, err
	}
	t := &tx{b: b, key: key, dir: dir, lock: lock}
	t.st, err = b.load(dir, key)
	if err != nil {
		t.end()
		return nil, err
	}
	t.now = b.now() // after the lock: instants never go back between sections
	t.dropBadWaiters()
	return t, nil
}

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

// lock takes the lock of key's directory dir, waiting no longer than ctx
// allows (and lockWait when ctx has no deadline).
func (b *Backend) lock(ctx context.Context, dir int, key governor.Key) (int, error) {
	lctx := ctx
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		lctx, cancel = context.WithTimeout(ctx, lockWait)
		defer cancel()
	}
	lock, err := lockDir(lctx, dir)
	if err == nil {
		return lock, nil
	}
	path := b.projectPath(key.Project) + "/" + escape(key.Resource) + "/" + lockName
	switch {
	case ctx.Err() != nil:
		return -1, ctx.Err()
	case lctx.Err() != nil:
		return -1, fmt.Errorf("%w: %s: not had in %v (governor holds it for milliseconds: is a process that is not governor, or a stopped one, holding it? see fuser -v %s)",
			ErrLockHeld, path, lockWait, path)
	}
	return -1, fmt.Errorf("governor: file backend: lock %s: %w", path, err)
}

// dropBadWaiters drops the queue entries that do not read, each said in
// an event: one bad entry is not served, and blocks nobody behind it.
func (t *tx) dropBadWaiters() {
	ws := t.st.Waiters
	for i := 0; i < len(ws); i++ {
		if why := t.st.badWaiter(i); why != "" {
			t.event(governor.EventDropped, ws[i].ID, 0, "queue entry does not read: "+why)
			ws = append(ws[:i], ws[i+1:]...)
			t.st.Waiters = ws
			i--
		}
	}
}

// end unlocks.
func (t *tx) end() {
	unix.Close(t.lock)
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
		case name == tempName:
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

// settle prunes what expired or died and hands freed weight to the queue,
// as the Redis scripts' settle does.
func (t *tx) settle() {
	st := t.st
	if staleBoot(st.Boot, t.b.boot) {
		// Every process of an earlier boot is dead.
		for len(st.Holders) > 0 {
			t.event(governor.EventReclaimed, st.Holders[0].ID, st.Holders[0].Token, "owner dead: the machine rebooted")
			t.dropHolder(0)
			st.Counters.ReclaimedDead++
		}
		st.Waiters = nil
		t.dirty = true
	}
	if st.Boot != t.b.boot {
		st.Boot = t.b.boot
		t.dirty = true
	}
	for i := 0; i < len(st.Holders); {
		if st.Holders[i].Expires <= t.now.boot {
			t.event(governor.EventExpired, st.Holders[i].ID, st.Holders[i].Token, "")
			t.hold(i)
			t.dropHolder(i)
			st.Counters.ReclaimedExpiry++
			continue
		}
		i++
	}
	if len(st.Waiters) > 0 {
		t.reap()
	}
	kept := st.Waiters[:0]
	for _, w := range st.Waiters {
		if w.Expires > t.now.boot {
			kept = append(kept, w)
		} else {
			t.expireWaiter(w)
			t.dirty = true
		}
	}
	st.Waiters = kept
	t.promote()
}

// reap reclaims holders whose owner is proven dead: their lease file is
// not locked and the command tree they declare is not alive
// (governor.Declaration.TreeVerdict), or their grant is unclaimed and
// their wake-up pipe orphaned. Leases this Backend holds are alive by
// definition.
func (t *tx) reap() {
	if t.reaped {
		return
	}
	t.reaped = true
	st := t.st
	for i := 0; i < len(st.Holders); {
		h := st.Holders[i]
		dead := false
		if !t.b.holds(t.key, h.ID) {
			switch {
			case h.Proof:
				// The lease file of a `governor run` is held by its
				// command tree, but a process of the tree may have closed
				// it: the tree's own proof of life (its cgroup, its run
				// id) must be gone as well.
				dead = leaseDead(t.dir, leasePrefix+escape(h.ID)) && h.Decl.TreeVerdict() != proc.Alive
			case h.Handed:
				if pokePipe(t.dir, waitPrefix+escape(h.ID), false) == pipeOrphaned {
					dead = true
					t.unlink = append(t.unlink, waitPrefix+escape(h.ID))
				}
			}
		}
		if dead {
			t.reapedDecls = append(t.reapedDecls, h.Decl)
			t.event(governor.EventReclaimed, h.ID, h.Token, "owner dead: its lease file is no longer locked")
			t.hold(i)
			t.dropHolder(i)
			st.Counters.ReclaimedDead++
			continue
		}
		i++
	}
}

// dropHolder removes holder i, its lease file, and this Backend's hold
// on it.
func (t *tx) dropHolder(i int) {
	st := t.st
	id := st.Holders[i].ID
	st.Holders = append(st.Holders[:i], st.Holders[i+1:]...)
	t.unlink = append(t.unlink, leasePrefix+escape(id))
	t.b.forget(t.key, id)
	t.dirty = true
}

// promote hands free weight to the head of the queue, in order, while it
// fits: the head blocks lighter waiters behind it, so a heavy waiter is
// never starved. Each grantee alone is woken, through its own pipe; a
// head whose pipe nobody listens to is dead and is dropped.
func (t *tx) promote() {
	if p, ok := t.policy(); ok {
		t.promotePolicy(p)
		return
	}
	st := t.st
	used := st.used()
	for len(st.Waiters) > 0 && !t.heldBack() {
		w := st.Waiters[0]
		pipe := waitPrefix + escape(w.ID)
		fits := used+w.Weight <= st.Limit
		// The waiter cannot act on a wake-up before this section ends.
		if pokePipe(t.dir, pipe, fits) == pipeOrphaned {
			st.Waiters = st.Waiters[1:]
			t.dirty = true
			t.unlink = append(t.unlink, pipe)
			continue
		}
		if !fits {
			return
		}
		st.Waiters = st.Waiters[1:]
		t.dirty = true
		h := t.grant(w.ID, w.Weight, time.Duration(w.TTL), w.Decl)
		h.Handed = true
		used += w.Weight
	}
}

// grant adds a holder with a new fencing token.
func (t *tx) grant(id string, weight int, ttl time.Duration, decl governor.Declaration) *holder {
	st := t.st
	tok := max(st.Token+1, t.now.wall.UnixMicro())
	st.Token = tok
	st.Counters.Acquired++
	st.Holders = append(st.Holders, holder{ID: id, Weight: weight, Token: tok, Acquired: t.now.boot,
		Heartbeat: t.now.boot, Expires: t.now.boot + int64(ttl), Decl: decl})
	t.dirty = true
	return &st.Holders[len(st.Holders)-1]
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

func (t *tx) fits(weight int) bool {
	return len(t.st.Waiters) == 0 && t.st.used()+weight <= t.st.Limit && !t.heldBack()
}

// Acquire implements governor.Backend.
func (b *Backend) Acquire(ctx context.Context, req governor.Request) (governor.Result, error) {
	if b.isClosed() {
		return governor.Result{}, governor.ErrClosed
	}
	if !governor.OwnerProven(req.ID, req.Secret) {
		return governor.Result{}, governor.NotOwner(req.Key, req.ID)
	}
	t, err := b.begin(ctx, req.Key, true)
	if err != nil {
		return governor.Result{}, err
	}
	defer t.end()
	st := t.st
	t.settle()

	// Already granted (freed weight was handed to this waiter): claim it.
	if h := st.holder(req.ID); h != nil {
		h.Expires = t.now.boot + int64(req.TTL)
		h.Heartbeat = t.now.boot
		h.Handed = false
		t.dirty = true
		return b.granted(t, req, h)
	}

	// A newcomer may need the room of holders that died: prove them so
	// first (settle did only if someone was queued).
	if len(st.Holders) > 0 {
		t.reap()
		t.promote()
	}
	// A waiter whose queue entry someone else withdrew learns who and
	// why, and is not queued again.
	if !req.New && st.waiterIndex(req.ID) < 0 {
		if e := st.withdrawn(req.ID); e != nil {
			if err := t.commit(); err != nil {
				return governor.Result{}, err
			}
			return governor.Result{}, &governor.WithdrawnError{Resource: req.Key.Resource, WaiterID: req.ID,
				Kind: e.Kind, By: e.By, Detail: e.Detail, At: time.Unix(0, e.At)}
		}
	}
	t.inForce(req.Limit, req.ID)
	t.agreePolicy(req, len(st.Holders) == 0 && len(st.Waiters) == 0)
	p, pol := t.policy()
	if req.Weight > st.Limit || pol && policyNever(p, st.Limit, policyClass(p, req.Priority), req.FairKey, req.Weight) {
		if i := st.waiterIndex(req.ID); i >= 0 {
			st.Waiters = append(st.Waiters[:i], st.Waiters[i+1:]...)
			t.dirty = true
		}
		lim := st.Limit
		if err := t.commit(); err != nil {
			return governor.Result{}, err
		}
		return governor.Result{}, fmt.Errorf("%w: weight %d for %s; the limit in force is %d",
			governor.ErrTooHeavy, req.Weight, req.Key.Resource, lim)
	}

	// A request with a supersede key that is not queued yet (granted, it
	// would have been claimed above; withdrawn, it would have been told)
	// replaces the older one with its key.
	if req.Supersede != "" && st.waiterIndex(req.ID) < 0 {
		t.supersede(req)
	}
	if pol {
		return b.acquirePolicy(t, p, req)
	}
	i := st.waiterIndex(req.ID)
	if i < 0 {
		if t.fits(req.Weight) {
			return b.granted(t, req, t.grant(req.ID, req.Weight, req.TTL, req.Declaration))
		}
		if req.Mode != governor.Wait {
			return b.refused(t, req)
		}
		st.Waiters = append(st.Waiters, waiter{ID: req.ID, Weight: req.Weight, TTL: int64(req.TTL),
			Enqueued: t.now.boot, Decl: req.Declaration})
		st.Counters.Waited++
		i = len(st.Waiters) - 1
	}
	return b.queued(t, req, i, t.now.boot+int64(req.QueueTTL))
}

// queued ends an Acquire that left req queued as waiter i, its queue
// entry refreshed to expire at exp.
func (b *Backend) queued(t *tx, req governor.Request, i int, exp int64) (governor.Result, error) {
	t.st.Waiters[i].Expires = exp
	t.dirty = true
	t.superseding(req, false)
	if err := t.commit(); err != nil {
		return governor.Result{}, err
	}
	return governor.Result{Outcome: governor.Queued, Position: i + 1,
		Status: t.st.status(req.Key, t.now, b.boot, holdersInRefusal)}, nil
}

// granted ends an Acquire that granted h to req.
func (b *Backend) granted(t *tx, req governor.Request, h *holder) (governor.Result, error) {
	t.attach(h)
	t.superseding(req, true)
	if err := t.commit(); err != nil {
		b.forget(req.Key, req.ID)
		return governor.Result{}, err
	}
	return governor.Result{Outcome: governor.Granted, Token: h.Token, Expires: t.now.at(h.Expires)}, nil
}

// refused ends a Fail-mode Acquire that found no room.
func (b *Backend) refused(t *tx, req governor.Request) (governor.Result, error) {
	t.st.Counters.Busy++
	t.dirty = true
	if err := t.commit(); err != nil {
		return governor.Result{}, err
	}
	return governor.Result{Outcome: governor.Refused,
		Status: t.st.status(req.Key, t.now, b.boot, holdersInRefusal)}, nil
}

// Renew implements governor.Backend.
func (b *Backend) Renew(ctx context.Context, key governor.Key, id, secret string, ttl time.Duration) (time.Time, error) {
	return b.renew(ctx, key, id, secret, func(h *holder, now int64) {
		if ttl == 0 {
			ttl = time.Duration(h.Expires - h.Heartbeat) // the lease's own
		}
		h.Expires = now + int64(ttl)
		h.Heartbeat = now
	})
}

// Touch implements governor.Backend.
func (b *Backend) Touch(ctx context.Context, key governor.Key, id, secret string) (time.Time, error) {
	return b.renew(ctx, key, id, secret, func(h *holder, now int64) { h.Progress = now })
}

// renew applies change (given the boot clock's now) to held lease id
// that secret proves and that is neither cancelled in progress nor
// stalled, and returns its expiry.
func (b *Backend) renew(ctx context.Context, key governor.Key, id, secret string, change func(h *holder, now int64)) (time.Time, error) {
	if b.isClosed() {
		return time.Time{}, governor.ErrClosed
	}
	if !governor.OwnerProven(id, secret) {
		return time.Time{}, governor.NotOwner(key, id)
	}
	t, err := b.begin(ctx, key, false)
	if errors.Is(err, errNoState) {
		b.forget(key, id)
		return time.Time{}, governor.ErrLeaseLost
	}
	if err != nil {
		return time.Time{}, err
	}
	defer t.end()
	t.settle()
	h := t.st.holder(id)
	var fail error
	if h == nil {
		b.forget(key, id)
		fail = t.st.lost(key, id)
	} else {
		fail = h.refused(key, t.now)
	}
	if fail != nil {
		if err := t.commit(); err != nil {
			return time.Time{}, err
		}
		return time.Time{}, fail
	}
	change(h, t.now.boot)
	exp := t.now.at(h.Expires)
	t.dirty = true
	if err := t.commit(); err != nil {
		return time.Time{}, err
	}
	return exp, nil
}

// Release implements governor.Backend.
func (b *Backend) Release(ctx context.Context, key governor.Key, id, secret string) error {
	if b.isClosed() {
		return governor.ErrClosed
	}
	if !governor.OwnerProven(id, secret) {
		return governor.NotOwner(key, id)
	}
	t, err := b.begin(ctx, key, false)
	if errors.Is(err, errNoState) {
		b.forget(key, id)
		return governor.ErrNotHeld
	}
	if err != nil {
		return err
	}
	defer t.end()
	t.settle()
	i := holderIndex(t.st, id)
	if i < 0 {
		b.forget(key, id)
		if err := t.commit(); err != nil {
			return err
		}
		return governor.ErrNotHeld
	}
	t.hold(i)
	t.dropHolder(i)
	t.st.Counters.Released++
	t.promote()
	return t.commit()
}

func holderIndex(st *state, id string) int {
	for i := range st.Holders {
		if st.Holders[i].ID == id {
			return i
		}
	}
	return -1
}

// Cancel implements governor.Backend.
func (b *Backend) Cancel(ctx context.Context, key governor.Key, id, secret string) error {
	if b.isClosed() {
		return governor.ErrClosed
	}
	if !governor.OwnerProven(id, secret) {
		return governor.NotOwner(key, id)
	}
	t, err := b.begin(ctx, key, false)
	if errors.Is(err, errNoState) {
		return nil
	}
	if err != nil {
		return err
	}
	defer t.end()
	t.settle()
	if i := t.st.waiterIndex(id); i >= 0 {
		t.st.Waiters = append(t.st.Waiters[:i], t.st.Waiters[i+1:]...)
		t.dirty = true
	}
	if i := holderIndex(t.st, id); i >= 0 {
		t.dropHolder(i)
		t.st.Counters.Released++
	}
	t.promote()
	return t.commit()
}

// Reclaim implements governor.Backend.
func (b *Backend) Reclaim(ctx context.Context, key governor.Key, id string, token int64) (bool, error) {
	if b.isClosed() {
		return false, governor.ErrClosed
	}
	t, err := b.begin(ctx, key, false)
	if errors.Is(err, errNoState) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer t.end()
	t.settle()
	i := holderIndex(t.st, id)
	if i < 0 || t.st.Holders[i].Token != token {
		return false, t.commit()
	}
	t.event(governor.EventReclaimed, id, token, "owner dead")
	t.hold(i)
	t.dropHolder(i)
	t.st.Counters.ReclaimedDead++
	t.promote()
	if err := t.commit(); err != nil {
		return false, err
	}
	return true, nil
}

// CountLost implements governor.Backend.
func (b *Backend) CountLost(ctx context.Context, key governor.Key, id string, token int64, reason string) error {
	if b.isClosed() {
		return governor.ErrClosed
	}
	t, err := b.begin(ctx, key, true)
	if err != nil {
		return err
	}
	defer t.end()
	t.settle()
	t.event(governor.EventLost, id, token, reason)
	t.st.Counters.Lost++
	t.dirty = true
	return t.commit()
}

// Status implements governor.Backend. It reads without locking: the
// state file is replaced atomically, so it is always whole.
func (b *Backend) Status(ctx context.Context, key governor.Key) (governor.Status, error) {
	if b.isClosed() {
		return governor.Status{}, governor.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return governor.Status{}, err
	}
	st, err := b.peek(key)
	if err != nil || st == nil {
		return governor.Status{Key: key, Now: b.now().wall}, err
	}
	return st.status(key, b.now(), b.boot, -1), nil
}

// peek reads key's state without locking (the state file is replaced
// atomically, so it is always whole): nil when key has no state.
func (b *Backend) peek(key governor.Key) (*state, error) {
	dir, err := b.openResource(key.Project, key.Resource, false)
	if errors.Is(err, errNoState) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer unix.Close(dir)
	return b.load(dir, key)
}

// Resources implements governor.Backend: the resources of project that
// have a state file, sorted.
func (b *Backend) Resources(ctx context.Context, project string) ([]string, error) {
	all, err := b.list(ctx, project)
	if err != nil {
		return nil, err
	}
	names := all[:0]
	for _, n := range all {
		if !isSeq(n) {
			names = append(names, n)
		}
	}
	return names, nil
}

// list returns every name of project that has a state file, sorted:
// resources, and the pseudo-resources of sequences and rate limits.
func (b *Backend) list(ctx context.Context, project string) ([]string, error) {
	if b.isClosed() {
		return nil, governor.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	root, err := b.openRoot()
	if err != nil {
		return nil, err
	}
	defer unix.Close(root)
	proj, err := openat(root, escape(project), unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err == unix.ENOENT {
		return nil, nil
	}
	if err != nil {
		return nil, b.dirError(b.projectPath(project), err)
	}
	f := os.NewFile(uintptr(proj), b.projectPath(project))
	defer f.Close()
	entries, err := f.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("governor: file backend: list %s: %w", b.projectPath(project), err)
	}
	var names []string
	for _, e := range entries {
		dir, err := openat(proj, e, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			continue // not a resource directory
		}
		name, ok := unescape(e)
		if !ok && strings.HasPrefix(e, hashPrefix) {
			// A hashed name: the state file tells the real one.
			data, err := readFile(dir, stateName)
			var st state
			if err == nil {
				err = json.Unmarshal(data, &st)
			}
			if err == nil && (st.Project != project || escape(st.Resource) != e) {
				err = errors.New("it names another resource")
			}
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				unix.Close(dir)
				return nil, fmt.Errorf("%w: %s/%s/%s: %v; move the directory aside if it is not governor's",
					ErrCorrupt, b.projectPath(project), e, stateName, err)
			}
			name, ok = st.Resource, err == nil
		} else if ok {
			var s unix.Stat_t
			ok = unix.Fstatat(dir, stateName, &s, unix.AT_SYMLINK_NOFOLLOW) == nil
		}
		unix.Close(dir)
		if ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names, nil
}

// Close implements governor.Backend. Leases still held are left to
// expire: their lease files are given up, and their records marked as
// unproven under the lock first, so that they are not taken for dead.
// Notifications stop. It returns the first error.
func (b *Backend) Close() error {
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
	var first error
	for ref, f := range leases {
		if err := b.detach(ref); err != nil && first == nil {
			first = err
		}
		f.Close()
	}
	return first
}

// detach marks a lease's record as without lease-file proof, so that it
// lives by its TTL alone once this process lets go of the file.
func (b *Backend) detach(ref leaseRef) error {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	t, err := b.begin(ctx, ref.key, false)
	if errors.Is(err, errNoState) {
		return nil
	}
	if err != nil {
		return err
	}
	defer t.end()
	if h := t.st.holder(ref.id); h != nil && h.Proof {
		h.Proof = false
		t.dirty = true
		if err := t.commit(); err != nil {
			return err
		}
	}
	_ = unix.Unlinkat(t.dir, leasePrefix+escape(ref.id), 0)
	return nil
}
