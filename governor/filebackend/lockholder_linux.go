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
	data, err := proc.ReadFile("/proc/locks")
	if err != nil {
		return LockHolder{}
	}
	pid := flockHolder(data, f, hasOpen)
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

// flockHolder is the pid that data, the content of /proc/locks, shows
// holding an flock on f ("1: FLOCK  ADVISORY  WRITE 15133
// fe:00:10011890 0 EOF": major and minor in hex, then the inode), 0 if
// none. A blocked request ("1: -> FLOCK ...") holds nothing. The device
// shown is the file system's, which some (btrfs subvolumes, overlayfs)
// show otherwise to stat: a line with f's inode on another device
// counts when open confirms that its process has f open. A pid of
// another PID namespace shows as 0 or -1.
func flockHolder(data []byte, f fileID, open func(pid int, f fileID) bool) int {
	maj, minor := uint64(unix.Major(f.dev)), uint64(unix.Minor(f.dev))
	ino := strconv.FormatUint(f.ino, 10)
	var others []int
	for line := range strings.Lines(string(data)) {
		fs := strings.Fields(line)
		if len(fs) < 6 || fs[1] != "FLOCK" {
			continue
		}
		dev := strings.Split(fs[5], ":")
		pid, err := strconv.Atoi(fs[4])
		if len(dev) != 3 || dev[2] != ino || err != nil || pid <= 0 {
			continue
		}
		ma, err1 := strconv.ParseUint(dev[0], 16, 32)
		mi, err2 := strconv.ParseUint(dev[1], 16, 32)
		if err1 == nil && err2 == nil && ma == maj && mi == minor {
			return pid
		}
		others = append(others, pid)
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
