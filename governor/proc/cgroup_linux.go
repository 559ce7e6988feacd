//go:build linux

package proc

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// ChildCgroup returns the directory of the cgroup v2 group called name
// inside the caller's own group: where supervise makes a tree's group,
// and `governor run` its command's (RunCgroupName). ok is false where
// there is no cgroup v2 hierarchy, where name is not one path element,
// and where Portable switches the Linux extras off. It makes nothing.
func ChildCgroup(name string) (dir string, ok bool) {
	if Portable() || name == "" || strings.ContainsAny(name, "/\x00") || name == "." || name == ".." {
		return "", false
	}
	self, ok := CgroupOf(os.Getpid())
	if !ok {
		return "", false
	}
	return filepath.Join(self, name), true
}

// CgroupOf returns the directory of the cgroup v2 group of process pid.
// ok is false where there is no cgroup v2 hierarchy or pid's group cannot
// be read (it is gone).
func CgroupOf(pid int) (dir string, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return "", false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rel, found := strings.CutPrefix(line, "0::"); found {
			mount, err := cgroup2Mount()
			if err != nil {
				return "", false
			}
			return filepath.Join(mount, rel), true
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
// error. The kernel refuses to remove a group while a process is in it:
// a populated group is left, and the error says so (EBUSY).
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
