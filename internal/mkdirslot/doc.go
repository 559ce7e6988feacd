// Package mkdirslot shares one machine-wide slot with the shell wrapper
// with-heavy-lock, in the wrapper's own form, so that processes using the
// wrapper and processes using governor exclude each other.
//
// The wrapper takes the slot with an atomic mkdir of DIR/slot.d and writes
// two files inside: pid (the holder's process id, a decimal number and a
// newline) and cmd (the command it runs). It releases by removing
// slot.d. HEAVY_LOCK_DIR moves DIR; HEAVY_LOCK_HELD, when non-empty, tells
// a nested wrapper that an ancestor holds the slot. This package takes,
// inspects and releases such a slot the same way:
//
//   - TryAcquire makes slot.d with mkdir(2) (atomic: one of any number of
//     racing wrappers and governors wins), then writes pid and cmd.
//   - A slot.d is reclaimed only when its pid file names a positive pid
//     that is proven dead: no such process (kill(pid, 0) fails with
//     ESRCH), or a zombie. The pid file has no start time, so a reused pid
//     keeps the slot held; EPERM means alive. A slot.d with no pid file
//     yet (the gap between the wrapper's mkdir and its write), an empty
//     or corrupt pid file, or a pid that cannot be checked is held: it is
//     waited for or refused, never removed. One left so for longer than
//     StuckAfter is reported as stuck (Holder.Stuck), for a person to clear
//     with Remove (governor takeover RESOURCE --force).
//   - Release removes slot.d only when it is still the one this process
//     made: its pid file still holds what was written.
//
// Removal renames slot.d to a unique name in DIR first, so other processes
// see it either whole or gone, never half removed; the renamed directory is
// then deleted.
//
// Another user sharing DIR must not be able to redirect what governor
// writes or reads there. DIR is refused unless only root or you can change
// its entries (fstrust.DirProblem: owned by root or you, writable by
// group or others only with the sticky bit, as /tmp), and every step
// works on the opened DIR: mkdirat, slot.d opened with O_NOFOLLOW, pid and
// cmd created with O_EXCL|O_NOFOLLOW. Reading a slot.d (Inspect) never
// follows a symbolic link and never blocks (O_NONBLOCK), reads only
// regular files owned by slot.d's owner, at most a few hundred bytes, and
// returns them escaped for a terminal (safetext).
//
// HeldByAncestor is the rule for HEAVY_LOCK_HELD: the variable alone
// proves nothing (any process can export it); slot.d must name a live
// ancestor of the caller.
//
// The wrapper gives no notification when it releases, so Acquire polls,
// every PollInterval. Fairness between governor processes is governor's
// (they queue FIFO on the lease of the bound resource before touching the
// slot, so at most one governor process polls a slot at a time); between
// that one and wrappers, whoever's mkdir comes first wins.
package mkdirslot
