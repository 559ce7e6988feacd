//go:build linux

package runner

import (
	"bytes"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/governor-dev/governor/governor/proc"
)

// killMarked sends SIGKILL to every process but this one whose initial
// environment lists id in GOVERNOR_RUN_IDS, and returns how many it
// signalled. Each is signalled through a pidfd opened between two reads of
// its start time, so a pid reused meanwhile is never hit. A dying process
// may be counted again by the next scan; a zombie has no environment and
// is not.
func killMarked(id string) (int, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return 0, err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return 0, err
	}
	self := os.Getpid()
	n := 0
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid <= 1 || pid == self {
			continue
		}
		start, err := proc.StartTime(pid)
		if err != nil || !marked(pid, id) {
			continue
		}
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue
		}
		if now, err := proc.StartTime(pid); err == nil && now == start {
			if unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0) == nil {
				n++
			}
		}
		unix.Close(fd)
	}
	return n, nil
}

// marked reports whether the initial environment of pid lists id in
// GOVERNOR_RUN_IDS. An unreadable environment (another user, a
// non-dumpable process, a zombie) is not marked.
func marked(pid int, id string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	prefix := []byte(EnvRunIDs + "=")
	for kv := range bytes.SplitSeq(b, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, prefix); ok {
			for _, f := range strings.Fields(string(v)) {
				if f == id {
					return true
				}
			}
		}
	}
	return false
}
