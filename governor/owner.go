package governor

import (
	"context"
	"fmt"
	"strings"

	"github.com/governor-dev/governor/governor/naming"
	"github.com/governor-dev/governor/governor/proc"
)

// EnvRunIDs is the environment variable that marks every process of a
// `governor run` command tree: the invocation ids of the run and of the
// runs around it, space-separated, innermost last.
const EnvRunIDs = "GOVERNOR_RUN_IDS"

// OwnerVerdict is the one rule that tells whether the owner of a lease
// or queue entry declared by d is dead, so that another process may
// reclaim it at once (SPEC invariant 2). Only on the host that declared
// it (HostID), and only when:
//   - PID, the declared holder, is proven dead (pid and start time:
//     proc.Check), and GovernorPID too when its start time is declared
//     (a `governor run` declares its watchdog as PID and itself beside
//     it: either one alive proves the tree supervised); and
//   - the command tree is gone: its cgroup, if declared, is not
//     populated, and no process carries RunID in EnvRunIDs.
//
// It is proc.Alive if one of these is alive, proc.Unknown where nothing
// can be proven (another host, no pid declared, an unreadable process or
// process table) — the lease must then wait for its TTL — and proc.Dead
// otherwise. The file backend adds a stronger proof of life of its own:
// a lease file still locked (see filebackend).
func (d Declaration) OwnerVerdict() proc.Verdict {
	if d.PID == 0 || d.HostID == "" || d.HostID != proc.HostID() {
		return proc.Unknown
	}
	v := proc.Check(d.PID, d.StartTime)
	if v == proc.Dead && d.GovernorPID != 0 && d.GovernorStart != 0 {
		v = proc.Check(d.GovernorPID, d.GovernorStart)
	}
	if v != proc.Dead {
		return v
	}
	return d.treeVerdict()
}

// treeVerdict is the part of OwnerVerdict about the command tree of a
// `governor run`: proc.Alive when, on the host that declared it, its
// cgroup is populated or a process carries RunID in EnvRunIDs;
// proc.Unknown on another host or when the process table cannot be read;
// proc.Dead otherwise (nothing declared included). The file backend asks
// it before it reclaims a lease whose lease file nobody holds: a process
// of the tree that closed its inherited descriptors still keeps the slot.
func (d Declaration) treeVerdict() proc.Verdict {
	if d.HostID == "" || d.HostID != proc.HostID() {
		return proc.Unknown
	}
	if d.Cgroup != "" && proc.CgroupPopulated(d.Cgroup) {
		return proc.Alive
	}
	if d.RunID != "" {
		marked, err := proc.Marked(EnvRunIDs, d.RunID)
		if err != nil {
			return proc.Unknown
		}
		if len(marked) > 0 {
			return proc.Alive
		}
	}
	return proc.Dead
}

// RemoveDeadCgroup removes the cgroup v2 group that the command tree of
// d's owner was born in and left behind: a `governor run` killed together
// with its watchdog leaves its group, empty once the tree is gone. Call
// it only once d's owner is proven dead and its lease reclaimed (as
// Governor does after OwnerVerdict, and the file backend after its
// lease-file proof), so that the group goes with the lease instead of
// lingering.
//
// It removes nothing but that run's group: on d's host only, the group
// named proc.RunCgroupName(d.RunID) inside the caller's own group
// (proc.ChildCgroup: where a governor in the caller's group made it),
// and only while it is empty — a populated group proves the owner alive,
// and the kernel refuses to remove it anyway. Groups inside it, of runs
// nested in the dead one, go with it. It returns nil when there is
// nothing to remove (no group declared, another host, a group declared
// elsewhere, already gone) and does not wait: an error means the group
// is left, for the next reclaim or the stale sweep of the next run.
func (d Declaration) RemoveDeadCgroup() error {
	if d.Cgroup == "" || d.RunID == "" || d.HostID == "" || d.HostID != proc.HostID() || validRunID(d.RunID) != nil {
		return nil
	}
	dir, ok := proc.ChildCgroup(proc.RunCgroupName(d.RunID))
	if !ok || dir != d.Cgroup {
		return nil
	}
	if proc.CgroupPopulated(dir) {
		return fmt.Errorf("governor: cgroup %s of run %s is populated: its owner is not dead", dir, d.RunID)
	}
	return proc.RemoveCgroup(dir, 0)
}

// validRunID checks a run id to declare: one word of printable ASCII.
func validRunID(id string) error {
	if len(id) > naming.MaxNameLen || strings.IndexFunc(id, func(r rune) bool { return r <= ' ' || r > '~' }) >= 0 {
		return invalid("run id %q; allowed: one word of printable ASCII, at most %d bytes", id, naming.MaxNameLen)
	}
	return nil
}

// LeaseProver is implemented by a backend that keeps a proof of life of
// its own beside the declaration: the file backend's lease file, which
// the holder's processes keep locked while any of them lives. It is not
// part of Backend: the Redis backend has no such proof.
type LeaseProver interface {
	// LeaseAlive reports whether lease id of key is proven alive. An
	// error proves nothing either way.
	LeaseAlive(ctx context.Context, key Key, id string) (bool, error)
}

// ownerVerdict is OwnerVerdict for holder h of key, with the backend's
// own proof of life (LeaseProver) winning over declared pids found dead:
// what reclaims and takeovers decide on.
func (g *Governor) ownerVerdict(ctx context.Context, key Key, h Holder) proc.Verdict {
	v := h.OwnerVerdict()
	if v != proc.Dead {
		return v
	}
	if p, ok := g.b.(LeaseProver); ok {
		alive, err := p.LeaseAlive(ctx, key, h.LeaseID)
		switch {
		case err != nil:
			return proc.Unknown
		case alive:
			return proc.Alive
		}
	}
	return proc.Dead
}
