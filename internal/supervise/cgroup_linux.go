//go:build linux

package supervise

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/governor-dev/governor/governor/proc"
)

// A cgroup is a tree's own cgroup v2 group. The leader is born in it
// (CLONE_INTO_CGROUP) and every descendant with it, setsid'd and
// double-forked ones too, and no unprivileged process can leave it. So
// "populated 0" in cgroup.events proves the whole tree gone (zombies do
// not count), and a write to cgroup.kill SIGKILLs all of it at once.
// Where no cgroup v2 hierarchy is mounted or the caller may not make a
// group in its own, Start goes without one: the tree is then followed by
// /proc scans alone.
type cgroup struct {
	dir string
	fd  int // the directory, open for clone3
}

// newCgroup makes the group name in the caller's own group and opens it,
// or returns nil when it cannot (no cgroup v2, no permission, a kernel
// without cgroup.kill).
func newCgroup(name string) *cgroup {
	dir, ok := proc.ChildCgroup(name)
	if !ok {
		return nil
	}
	if err := unix.Mkdir(dir, 0o755); err != nil {
		return nil
	}
	removeStale(filepath.Dir(dir))
	c := &cgroup{dir: dir, fd: -1}
	if _, err := os.Stat(filepath.Join(dir, "cgroup.kill")); err != nil {
		c.remove() // before Linux 5.14: no atomic kill, not worth it
		return nil
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		c.remove()
		return nil
	}
	c.fd = fd
	return c
}

// removeStale removes the empty groups that trees of supervisors now dead
// left in parent. Start names a group "governor-PID-..." after the
// supervisor's pid when the caller names none: such a group goes once that
// pid is gone. governor run names its groups proc.RunCgroupName(ID) and
// its watchdog removes them when governor dies; if both were killed, the
// reclaim of the run's leases removes the group (governor.Declaration's
// RemoveCgroup), and else it goes once it has been empty for staleAge (a
// group is empty only for moments while its run is alive: before the
// leader is cloned into it, and after the tree is gone). Best effort: a
// group in use is never removed (the kernel refuses).
func removeStale(parent string) {
	ms, _ := filepath.Glob(filepath.Join(parent, "governor-*"))
	for _, m := range ms {
		if id, ok := strings.CutPrefix(filepath.Base(m), proc.RunCgroupPrefix); ok && id != "" {
			var st unix.Stat_t
			if unix.Stat(m, &st) != nil || time.Since(time.Unix(st.Mtim.Unix())) < staleAge || cgroupPopulated(m) {
				continue
			}
			_ = proc.RemoveCgroup(m, 0)
			continue
		}
		pidText, _, _ := strings.Cut(strings.TrimPrefix(filepath.Base(m), "governor-"), "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 || unix.Kill(pid, 0) != unix.ESRCH || cgroupPopulated(m) {
			continue
		}
		_ = proc.RemoveCgroup(m, 0) // refused (EBUSY) if a process came in meanwhile
	}
}

// staleAge is how long a run's group must have been left empty before
// another supervisor removes it.
var staleAge = time.Minute

// populated reports whether a process of the group (or of a group inside
// it) is alive. An unreadable cgroup.events counts as populated.
func (c *cgroup) populated() bool { return cgroupPopulated(c.dir) }

func cgroupPopulated(dir string) bool { return proc.CgroupPopulated(dir) }

// signal sends sig to every process directly in the group but those skip
// names, each through a pidfd and only if the process is still in the
// group once the pidfd is open (so a pid reused meanwhile is never hit).
// Groups inside it are those of nested trees, whose supervisors are
// members here and forward what they get.
func (c *cgroup) signal(sig syscall.Signal, skip func(pid int) bool) error {
	b, err := os.ReadFile(filepath.Join(c.dir, "cgroup.procs"))
	if err != nil {
		return err
	}
	var first error
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil || skip(pid) {
			continue
		}
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue // gone
		}
		if g, ok := proc.CgroupOf(pid); ok && g == c.dir {
			if err := unix.PidfdSendSignal(fd, sig, nil, 0); err != nil && err != unix.ESRCH && first == nil {
				first = err
			}
		}
		unix.Close(fd)
	}
	return first
}

// kill SIGKILLs every process of the group and of the groups inside it.
func (c *cgroup) kill() error { return proc.KillCgroup(c.dir) }

// remove closes the group and removes its directory (the kernel refuses
// while a process is in it; a killed tree leaves it within moments).
func (c *cgroup) remove() {
	if c.fd >= 0 {
		unix.Close(c.fd)
		c.fd = -1
	}
	_ = proc.RemoveCgroup(c.dir, time.Second)
}
