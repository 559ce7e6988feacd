//go:build linux

package supervise

import (
	"bufio"
	"errors"
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
	rel string // the group as /proc/PID/cgroup names it ("0::" + rel)
	fd  int    // the directory, open for clone3
}

// ChildCgroup returns the directory of the cgroup v2 group called name
// inside the caller's own group: the one Start makes for a tree whose
// Options.Cgroup is name. ok is false where there is no cgroup v2
// hierarchy, and where proc.Portable switches the Linux extras off. It
// makes nothing.
func ChildCgroup(name string) (dir string, ok bool) {
	if proc.Portable() {
		return "", false
	}
	dir, _, ok = childCgroup(name)
	return dir, ok
}

// childCgroup is ChildCgroup, with the group's path inside the hierarchy.
func childCgroup(name string) (dir, rel string, ok bool) {
	if name == "" || strings.ContainsAny(name, "/\x00") || name == "." || name == ".." {
		return "", "", false
	}
	mount, err := cgroup2Mount()
	if err != nil {
		return "", "", false
	}
	self, ok := procCgroup("self")
	if !ok {
		return "", "", false
	}
	rel = filepath.Join(self, name)
	return filepath.Join(mount, rel), rel, true
}

// procCgroup returns the cgroup v2 group of process pid ("self" for the
// caller), as /proc/PID/cgroup names it.
func procCgroup(pid string) (string, bool) {
	b, err := os.ReadFile("/proc/" + pid + "/cgroup")
	if err != nil {
		return "", false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if path, ok := strings.CutPrefix(line, "0::"); ok {
			return path, true
		}
	}
	return "", false
}

// cgroup2Mount returns where the cgroup v2 hierarchy is mounted (in a
// hybrid setup, next to the v1 controllers).
func cgroup2Mount() (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		if fs := strings.Fields(post); len(fs) > 0 && fs[0] == "cgroup2" {
			if f := strings.Fields(pre); len(f) >= 5 {
				return unescapeMount(f[4]), nil
			}
		}
	}
	return "", errors.New("no cgroup2 mount")
}

// unescapeMount undoes the octal escapes of mountinfo (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			n := 0
			valid := true
			for _, c := range s[i+1 : i+4] {
				if c < '0' || c > '7' {
					valid = false
					break
				}
				n = n*8 + int(c-'0')
			}
			if valid {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// newCgroup makes the group name in the caller's own group and opens it,
// or returns nil when it cannot (no cgroup v2, no permission, a kernel
// without cgroup.kill).
func newCgroup(name string) *cgroup {
	dir, rel, ok := childCgroup(name)
	if !ok {
		return nil
	}
	if err := unix.Mkdir(dir, 0o755); err != nil {
		return nil
	}
	removeStale(filepath.Dir(dir))
	c := &cgroup{dir: dir, rel: rel, fd: -1}
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
// pid is gone. governor run names its groups "governor-run-ID" and its
// watchdog removes them when governor dies; if both were killed, the group
// goes once it has been empty for staleAge (a group is empty only for
// moments while its run is alive: before the leader is cloned into it, and
// after the tree is gone). Best effort: a group in use is never removed
// (the kernel refuses).
func removeStale(parent string) {
	ms, _ := filepath.Glob(filepath.Join(parent, "governor-*"))
	for _, m := range ms {
		rest := strings.TrimPrefix(filepath.Base(m), "governor-")
		if id, ok := strings.CutPrefix(rest, "run-"); ok && id != "" {
			var st unix.Stat_t
			if unix.Stat(m, &st) != nil || time.Since(time.Unix(st.Mtim.Unix())) < staleAge || cgroupPopulated(m) {
				continue
			}
			_ = RemoveCgroup(m, 0)
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 || unix.Kill(pid, 0) != unix.ESRCH || cgroupPopulated(m) {
			continue
		}
		_ = RemoveCgroup(m, 0) // refused (EBUSY) if a process came in meanwhile
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
		if g, ok := procCgroup(f); ok && g == c.rel {
			if err := unix.PidfdSendSignal(fd, sig, nil, 0); err != nil && err != unix.ESRCH && first == nil {
				first = err
			}
		}
		unix.Close(fd)
	}
	return first
}

// kill SIGKILLs every process of the group and of the groups inside it.
func (c *cgroup) kill() error { return KillCgroup(c.dir) }

// KillCgroup SIGKILLs every process of the cgroup v2 group dir (see
// ChildCgroup) and of the groups inside it. A group that does not exist
// is not an error.
func KillCgroup(dir string) error {
	err := os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// RemoveCgroup removes the group dir, and the groups inside it (those of
// nested trees whose supervisors died with it), once their processes are
// gone, waiting for them up to wait. A group that does not exist is not an
// error.
func RemoveCgroup(dir string, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if e.IsDir() {
				_ = RemoveCgroup(filepath.Join(dir, e.Name()), time.Until(deadline))
			}
		}
		err := unix.Rmdir(dir)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if err != unix.EBUSY || time.Now().After(deadline) {
			return &os.PathError{Op: "rmdir", Path: dir, Err: err}
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// remove closes the group and removes its directory (the kernel refuses
// while a process is in it; a killed tree leaves it within moments).
func (c *cgroup) remove() {
	if c.fd >= 0 {
		unix.Close(c.fd)
		c.fd = -1
	}
	_ = RemoveCgroup(c.dir, time.Second)
}
