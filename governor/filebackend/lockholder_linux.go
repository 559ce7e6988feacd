package filebackend

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/governor-dev/governor/governor/proc"
)

// lockHolder is the process that holds an flock(2) on file f, as
// /proc/locks shows it, with its command name and whether it is
// stopped; the zero LockHolder when none is shown, or it has gone.
func lockHolder(f fileID) LockHolder {
	if f == (fileID{}) {
		return LockHolder{}
	}
	// A diagnosis: the lines that can be read serve, read again while
	// they show no holder (proc.LocksWith).
	pid := 0
	_, _ = proc.LocksWith(func(locks []proc.Lock) bool {
		pid = flockHolder(locks, f, hasOpen)
		return pid > 0
	})
	if pid <= 0 {
		return LockHolder{}
	}
	st, err := proc.Stat(pid)
	if err != nil {
		return LockHolder{}
	}
	comm, _ := proc.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	return LockHolder{PID: pid, Command: strings.TrimSpace(string(comm)), Stopped: st.Stopped()}
}

// flockHolder is the pid that locks, from /proc/locks, show holding an
// flock on f, 0 if none. The device shown is the file system's, which
// some (btrfs subvolumes, overlayfs) show otherwise to stat: a lock on
// f's inode on another device counts when open confirms that its
// process has f open. A pid of another PID namespace shows as 0 or -1.
func flockHolder(locks []proc.Lock, f fileID, open func(pid int, f fileID) bool) int {
	maj, minor := unix.Major(f.dev), unix.Minor(f.dev)
	var others []int
	for _, l := range locks {
		if l.Kind != proc.Flock || l.Inode != f.ino || l.PID <= 0 {
			continue
		}
		if l.Major == maj && l.Minor == minor {
			return l.PID
		}
		others = append(others, l.PID)
	}
	for _, pid := range others {
		if open(pid, f) {
			return pid
		}
	}
	return 0
}

// hasOpen reports whether process pid has file f open (false when its
// descriptors cannot be read: another user's process).
func hasOpen(pid int, f fileID) bool {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	d, err := os.Open(dir)
	if err != nil {
		return false
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	for _, n := range names {
		var st unix.Stat_t
		if unix.Stat(dir+"/"+n, &st) == nil && uint64(st.Dev) == f.dev && uint64(st.Ino) == f.ino {
			return true
		}
	}
	return false
}
