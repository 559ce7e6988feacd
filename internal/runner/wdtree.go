package runner

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/governor-dev/governor/governor/proc"
	"github.com/governor-dev/governor/internal/supervise"
)

// msgMembers starts the line of the watchdog protocol that names the
// processes governor's supervisor has attributed to the command tree,
// "members PID:START ...", the leader first (its pid is the tree's
// process-group id). Governor sends it before each plan, so that the
// watchdog knows the tree without its environment: a descendant that
// cleared it (env -i) carries no run id, and without a cgroup nothing
// else names it once governor is stopped or killed.
const msgMembers = "members"

// membersMessage is the members line for ms (nil: no line).
func membersMessage(ms []supervise.Member) string {
	if len(ms) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(msgMembers)
	for _, m := range ms {
		fmt.Fprintf(&b, " %d:%d", m.PID, m.Start)
	}
	b.WriteByte('\n')
	return b.String()
}

// knownTree is what the watchdog knows of the run's command tree besides
// the run id in its processes' environments: the members governor sent
// (by pid and start time, so a reused pid is never taken for one), the
// leader's process group, and, at each scan, every descendant of those by
// its parent link.
type knownTree struct {
	leader  supervise.Member // zero until the first members line
	members map[int]uint64   // pid -> start, the leader included
}

// parseMembers reads a members line into k: the members it names are
// added to those already known (one that has exited fails its identity
// check at the next scan and is dropped then).
func (k *knownTree) parseMembers(line string) error {
	f := strings.Fields(line)
	if len(f) < 2 || f[0] != msgMembers {
		return fmt.Errorf("unexpected line %q on the watchdog pipe; expected %q", line, msgMembers+" PID:START ...")
	}
	ms := make([]supervise.Member, 0, len(f)-1)
	for _, w := range f[1:] {
		p, s, ok := strings.Cut(w, ":")
		pid, err1 := strconv.Atoi(p)
		start, err2 := strconv.ParseUint(s, 10, 64)
		if !ok || err1 != nil || err2 != nil || pid <= 1 {
			return fmt.Errorf("unexpected member %q on the watchdog pipe; expected PID:START with a pid above 1", w)
		}
		ms = append(ms, supervise.Member{PID: pid, Start: start})
	}
	if k.members == nil {
		k.members = make(map[int]uint64)
	}
	if k.leader.PID == 0 {
		k.leader = ms[0]
	}
	for _, m := range ms {
		k.members[m.PID] = m.Start
	}
	return nil
}

// find returns the live processes of the tree in snap: the known members
// still there under their identity; the processes of the leader's
// process group while the group id is provably still the tree's (a known
// member, the leader included, is in it: a group id is not reused while
// the group has a process); the processes marked with the run id; and
// every descendant of those, by parent links. Members found gone are
// forgotten. It never returns the watchdog itself or governor.
func (k *knownTree) find(snap []proc.Info, marked []proc.Info) []proc.Info {
	self, parent := os.Getpid(), os.Getppid()
	byPid := make(map[int]proc.Info, len(snap))
	children := make(map[int][]proc.Info)
	for _, s := range snap {
		byPid[s.PID] = s
		children[s.PPID] = append(children[s.PPID], s)
	}
	var queue []proc.Info
	groupOurs := false
	for pid, start := range k.members {
		s, ok := byPid[pid]
		if !ok || s.Start != start {
			delete(k.members, pid)
			continue
		}
		groupOurs = groupOurs || s.PGID == k.leader.PID
		queue = append(queue, s)
	}
	if groupOurs {
		for _, s := range snap {
			if s.PGID == k.leader.PID && s.Start >= k.leader.Start {
				queue = append(queue, s)
			}
		}
	}
	queue = append(queue, marked...)
	var out []proc.Info
	seen := make(map[int]bool)
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		if seen[s.PID] || s.PID <= 1 || s.PID == self || s.PID == parent {
			continue
		}
		seen[s.PID] = true
		if !s.Zombie() {
			out = append(out, s)
		}
		// A child's entry was read in the same snapshot as its parent's,
		// and started after it: the parent link is the tree's.
		for _, c := range children[s.PID] {
			if c.Start >= s.Start {
				queue = append(queue, c)
			}
		}
	}
	return out
}

// live returns the live processes of run id's tree (knownTree.find on a
// fresh snapshot).
func (k *knownTree) live(id string) ([]proc.Info, error) {
	snap, err := proc.List()
	if err != nil {
		return nil, err
	}
	return k.find(snap, proc.MarkedIn(snap, EnvRunIDs, id)), nil
}
