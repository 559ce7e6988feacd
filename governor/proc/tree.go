package proc

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
)

// CgroupPopulated reports whether a process of the cgroup v2 group at dir
// (or of a group inside it) is alive, as its cgroup.events says. A
// missing group is not populated (never made, or removed once empty); an
// unreadable one counts as populated: it is no proof that its processes
// are gone.
func CgroupPopulated(dir string) bool {
	if dir == "" {
		return false
	}
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.events"))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	return !bytes.Contains(b, []byte("populated 0"))
}

// Marked returns the live processes, other than the caller, whose initial
// environment has variable name listing word among its space-separated
// words (EnvListHas): the processes of a tree marked with its id. A
// process whose environment cannot be read (another user's, a
// non-dumpable one) is not found.
func Marked(name, word string) ([]Info, error) {
	all, err := List()
	if err != nil {
		return nil, err
	}
	self := os.Getpid()
	var out []Info
	for _, p := range all {
		if p.PID <= 1 || p.PID == self || p.Zombie() || !EnvListHas(p.PID, name, word) {
			continue
		}
		out = append(out, p)
	}
	return out, nil
}
