package proc

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
)

// RunCgroupPrefix begins the name of the cgroup v2 group that the command
// tree of a `governor run` is born in (RunCgroupName).
const RunCgroupPrefix = "governor-run-"

// RunCgroupName is the name of the group of the command tree of the run
// whose id is id: made inside the group of the governor that runs it (see
// ChildCgroup).
func RunCgroupName(id string) string { return RunCgroupPrefix + id }

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
