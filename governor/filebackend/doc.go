// Package filebackend keeps governor's state in files on one machine, with
// no server to run. It implements governor.Backend with the semantics of
// the Redis scripts (scripts-lua) and passes the same conformance suite.
//
// # Layout
//
// Under the state dir (see DefaultDir), created 0700 and refused when it
// is a symlink, owned by another user or writable by others, or has a
// parent that another user could write (see New; a setgid dir is shared
// by its group, its files 0660 and directories 2770):
//
//	DIR/PROJECT/RESOURCE/lock        flock(2) target; never unlinked
//	DIR/PROJECT/RESOURCE/state       JSON; replaced atomically by rename
//	DIR/PROJECT/RESOURCE/state.tmp   the next state while it is written
//	DIR/PROJECT/RESOURCE/stats       JSON statistics (Observe); replaced by
//	                                 rename without a sync (stats.tmp)
//	DIR/PROJECT/RESOURCE/lease.ID    flock held by a holder while it lives
//	DIR/PROJECT/RESOURCE/wait.ID     a named pipe: wakes waiter ID
//
// Forget removes a resource's state and stats files; its directory and
// lock file stay, and a directory without a state file is not listed.
//
// The statistics (histograms) are in a file of their own because no
// guarantee needs them after a crash: recording them costs no sync and
// never rewrites the holders. A power loss may leave the stats file
// empty or torn; it is then read as no statistics, and the next
// observation starts it anew. The state file is synced at every change.
//
// PROJECT, RESOURCE and ID are escaped into file names: bytes other than
// A-Z a-z 0-9 '-' '_' and a '.' that is not first become %XX; a name
// that would grow past 240 bytes becomes '#' and its SHA-256. The state
// file repeats the real names, so a listing never depends on decoding.
// Every file is opened relative to its directory with O_NOFOLLOW: no
// symlink inside the state dir is ever followed.
//
// # Critical sections
//
// Each state-changing call takes an exclusive flock on the resource's lock
// file, reads the state, prunes expired holders and waiters, hands freed
// weight to the head of the queue, applies its change, writes state.tmp,
// syncs it (fdatasync; on macOS F_BARRIERFSYNC, see syncData) and renames
// it over state, then unlocks. A wait for the lock that gives up (its
// context ends, or lockWait passes) is a *LockWaitError naming the lock
// file and, on Linux, its holder (from /proc/locks) and whether it is
// stopped: a process stopped inside a critical section holds every other
// process of the resource until it is resumed. The kernel drops the
// lock of a process that dies, so no crash leaves a lock behind; a killed
// writer leaves at most state.tmp, which is only ever written under the
// lock and is removed by the next call. Status reads state without the
// lock: rename is atomic, so it never sees half a file. A state file that
// does not parse or contradicts itself is an error naming the file
// (errors.Is ErrCorrupt) and is never reset silently.
//
// The directory is not synced after the rename: a power loss may bring
// back the state before the last few calls, but every holder and waiter
// it names died with the machine (see Time) and fencing tokens stay
// increasing, so nothing is handed out twice. The state dir must be on a
// local file system: flock(2) is not reliable over NFS.
//
// # Time
//
// Expiries are instants of CLOCK_MONOTONIC, which every process on the
// machine shares, which never goes back and which does not jump when the
// wall clock is set. It is also the clock of Go's monotonic readings, on
// which a holder judges when its own lease runs out; both stop during a
// suspend, so the backend never expires a lease before its holder knows
// (CLOCK_BOOTTIME, which runs on through a suspend, would). On macOS the
// clock with these properties is CLOCK_UPTIME_RAW (machineClockID). The
// state records the kernel's boot id (kern.bootsessionuuid on macOS): holders and waiters of an earlier boot
// are dead and are dropped. Wall time is used
// only to show instants (Status, Holder, Result.Expires) and as a floor
// for fencing tokens, which are max(last+1, wall time in microseconds),
// so tokens keep increasing even if the state is deleted.
//
// # Dead owners
//
// A process that is granted a lease (Acquire returns Granted) opens
// lease.ID and holds a shared flock on it until Release, Cancel or Close.
// When someone needs room, the critical section tries an exclusive,
// non-blocking flock on the lease file of every holder owned by another
// Backend: if it gets it, and no process the holder declares is alive on
// this host (governor.Declaration.OwnerVerdict: its owner and governor
// pids, and the command tree - a `governor run` process that closed the
// lease file it inherited still lives in the run's cgroup or carries its
// run id; the owner, such as the client of a `governor bridge`, may be
// another process than the one that held the file), the owner is proven
// dead (SIGKILL
// and the OOM killer included), its weight is reclaimed at once (Counters
// ReclaimedDead) and the run's empty cgroup removed
// (governor.Declaration.RemoveDeadCgroup). A grant handed to a waiter that has not claimed it yet
// is proven dead the same way by its wake-up pipe (below). Anything else
// - a missing file, an error - is not proof: such a lease waits for its
// TTL. Lease files are only created and checked under the resource lock,
// and only unlinked once their lease has left the state, so two processes
// never both hold one lease. See Backend.LeaseFile to keep a lease proven
// alive by a child process tree. PID-based proofs for declared holders
// live in the Governor and apply on top.
//
// # Waking waiters
//
// Notify creates a named pipe wait.ID and keeps it open for reading (and
// writing, so that it never reads end-of-file); the runtime's poller
// waits on it, so nothing sleeps or polls. Whoever grants waiter ID opens
// its pipe without blocking and writes one byte: only that waiter wakes.
// A pipe that exists but that nobody has open (ENXIO) belongs to a dead
// waiter, which is dropped from the queue at once instead of blocking it
// until its queue TTL. A lost wake-up costs latency only: the Governor
// also re-checks on a bounded timer.
package filebackend
