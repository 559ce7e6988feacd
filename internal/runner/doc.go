// Package runner is `governor run`: it takes slots, runs one command as a
// supervised process tree while the leases heartbeat, and releases the
// slots only after the whole tree is gone. The CLI only turns flags into
// an [Options] and calls [Run]; every decision is made here.
//
// # Sequence
//
// Run validates the options (exit 125 on bad input, naming the bad value
// and what is allowed), opens the --record file, checks that the command
// exists (127 before waiting for any slot), waits for the watchdog
// (below; its start, begun first, runs beside these steps), opens the
// Governor, drops the resources an ancestor run already holds
// (nesting, below), and takes the others with AcquireAll, in the fixed
// global lock order. It then starts the command with package supervise: in
// its own process group, and on Linux under a child subreaper, with
// Pdeathsig. INT,
// TERM, HUP and QUIT are forwarded to the whole tree; a second INT sends
// KILL. When the command's leader exits, descendants it left behind are
// stopped (TERM, the kill grace, KILL): slots are never released while a
// process of the tree runs. Release is in reverse acquisition order.
//
// Exit codes (SPEC §4):
//
//	the command's own   it ran; 128+N when signal N killed it
//	73                  not acquired: busy with --if-busy fail, or --wait-timeout passed,
//	                    or the wait was withdrawn (governor cancel), saying who
//	75                  skipped: busy with --if-busy skip
//	122                 a lease was lost while it ran; the tree was stopped
//	124                 --timeout passed; the tree was stopped
//	125                 governor's own failure: bad flags, config, backend
//	126, 127            the command cannot be executed / was not found
//	128+N               governor itself got signal N while waiting for slots
//
// # Environment of the command
//
//	GOVERNOR_HELD     leases held by this run and its ancestors:
//	                  PROJECT/RESOURCE=LEASE_ID.SECRET,... (see FormatHeld)
//	GOVERNOR_TOKEN    their fencing tokens: PROJECT/RESOURCE=TOKEN,...
//	GOVERNOR_SESSION  the session the leases are declared under
//	GOVERNOR_RUN_IDS  the invocation ids of this run and its ancestors,
//	                  space-separated, innermost last
//
// A nested run for a resource that GOVERNOR_HELD names in the same project,
// with the secret that proves the lease, and that the backend still lists
// under that lease id, neither acquires it again (no self-deadlock on a
// limit-1 slot) nor releases it; its weight request is not checked against
// the ancestor's (ProvenHeld decides). An entry without the secret (lease
// ids are public: anyone could write one) or that the backend no longer
// lists is reported and the resource is acquired as usual.
//
// # Exec runs and the with-heavy-lock slot
//
// With no resource named, a run is an exec run of the project: the run
// lock and the join slots, by the rule written at [DefaultResource].
//
// A resource in [Options.MkdirLocks] is also the slot of the shell wrapper
// with-heavy-lock (package mkdirslot): after its lease, and before any
// resource later in the lock order, Run takes DIR/slot.d in the wrapper's
// form, naming the watchdog's pid (which, as below, outlives the tree). The
// command sees HEAVY_LOCK_HELD. A run that finds HEAVY_LOCK_HELD non-empty
// still takes the lease (unless GOVERNOR_HELD proves it), and skips the
// slot only while slot.d names a live ancestor (mkdirslot.HeldByAncestor):
// the variable alone proves nothing. The slot is
// released just before its lease, and only while it is still this run's.
//
// # If governor dies
//
// The command must not go on running on a slot nobody holds. On Linux the
// direct child gets SIGKILL through Pdeathsig (macOS has none: there the
// watchdog below is what kills it). Where a cgroup v2 group can be
// made (root, or a delegated group), the tree is born in its own group,
// governor-run-ID (supervise.Options.Cgroup): nothing of it can leave, its
// emptiness proves the tree gone, and one write to cgroup.kill kills all
// of it. For the rest of the tree Run uses two more layers:
//
//   - A watchdog process: Run re-executes the governor binary
//     ([Options.Watchdog], the hidden `governor run --watchdog ID`) before
//     acquiring, connected by a pipe. When governor exits without saying
//     "done" on the pipe — a SIGKILL included — the pipe reaches end of
//     file and the watchdog kills the run's cgroup, if it has one, then
//     SIGKILLs, each under its identity, every process whose initial environment
//     carries the run id in GOVERNOR_RUN_IDS, setsid'd ones included,
//     until two scans in a row find none ([Watchdog]), and removes the
//     cgroup.
//     The watchdog's pid is the one declared as the holder of the leases,
//     and beside it governor (pid and start time), the run's cgroup and
//     the run id (governor.Declaration.OwnerVerdict): a same-host proof of
//     death (file or Redis backend) frees the slot only once all of them
//     are gone. If the watchdog itself dies, Run stops the tree (governor
//     keeps the slot meanwhile) and exits 122; it starts no new watchdog,
//     as the leases declare the old one.
//   - Deadlines: after each renewal Run sends the watchdog the leases'
//     stop plan (TERM, then KILL by the earliest local deadline), as
//     readings of proc.SleepClock. If governor is stopped (SIGSTOP)
//     and no newer plan comes, the watchdog stops the tree by the
//     deadline, before the backend can grant the slot elsewhere; Run
//     stops it from the same plan when renewals fail (see [Watchdog]).
//   - Records: after the grant Run sends the watchdog the run's store
//     and leases; a watchdog that signals the tree records why, once it
//     has, as a eventkind.WatchdogKill on each lease (see [Watchdog]).
//   - File backend: the open lease files are inherited by the command
//     (descriptors 3, 4, ...), so the kernel lock that proves a holder alive
//     is held while any process of the tree lives, and dropped — the slot
//     free at once — when the last one dies.
//
// If governor and the watchdog (in a process group of its own) are both
// killed, nothing kills the rest of the tree; it keeps the slot held on
// this host while its cgroup is populated, a process carries the run id,
// or (file backend) it keeps an inherited lease file open — until the
// lease's TTL, since nobody renews it. The same-host reclaim (or
// takeover) that finds them all gone also removes the run's empty cgroup
// (governor.Declaration.RemoveDeadCgroup); a group that no reclaim
// reaches goes with the start of a later run once empty for a minute.
//
// Limits, without a cgroup only (macOS always): a descendant that clears its
// environment (env -i) or is not dumpable (on macOS: whose environment the
// kernel will not show), and is orphaned by governor's death, is not found
// by the watchdog, and proves nothing alive but the lease files it keeps.
//
// # Records
//
// With --record FILE.jsonl, each invocation appends a grant [Record] once
// every slot is in hand (before the command starts: the wait, measured on
// the monotonic clock, is then on file even if governor is killed with
// SIGKILL), and an end Record once everything is released. Each is a
// single write(2) on an O_APPEND descriptor, so concurrent runs never
// interleave and earlier lines are never rewritten. A run inside another
// governor run names it (Record.OuterRun), so a nested run's own zero wait
// is told apart from the outer run's. The file is opened before anything
// is acquired, without following a symbolic link, without blocking, and
// only if it is a regular file (created 0600): a bad path fails the run
// (125) at once. [ReadRecords] reads both kinds; [Invocations] folds them
// into one per run.
package runner
