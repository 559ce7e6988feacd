package filebackend

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/governor-dev/governor/governor/proc"
)

// TestFlockHolder: the holder of an flock is read from /proc/locks by
// the lock file's device and inode; blocked requests, POSIX locks, other
// files and pids of another namespace are passed over, and a line with
// the inode on another device (btrfs, overlayfs) counts only when its
// process has the file open.
func TestFlockHolder(t *testing.T) {
	f := fileID{dev: unix.Mkdev(0xfe, 0), ino: 10011890}
	openBy := func(pids ...int) func(int, fileID) bool {
		return func(pid int, g fileID) bool {
			for _, p := range pids {
				if p == pid && g == f {
					return true
				}
			}
			return false
		}
	}
	none := openBy()
	for _, c := range []struct {
		name  string
		locks string
		open  func(int, fileID) bool
		want  int
	}{
		{"held", "1: FLOCK  ADVISORY  WRITE 15133 fe:00:10011890 0 EOF\n", none, 15133},
		{"blocked requests skipped", "1: FLOCK  ADVISORY  WRITE 15133 fe:00:10011890 0 EOF\n" +
			"1: -> FLOCK  ADVISORY  WRITE 222 fe:00:10011890 0 EOF\n", none, 15133},
		{"only blocked", "1: -> FLOCK  ADVISORY  WRITE 222 fe:00:10011890 0 EOF\n", none, 0},
		{"posix lock", "1: POSIX  ADVISORY  WRITE 15133 fe:00:10011890 0 EOF\n", none, 0},
		{"other inode", "1: FLOCK  ADVISORY  WRITE 15133 fe:00:10011891 0 EOF\n", none, 0},
		{"inode prefix", "1: FLOCK  ADVISORY  WRITE 15133 fe:00:100118900 0 EOF\n", none, 0},
		{"shared", "4: FLOCK  ADVISORY  READ 77 fe:00:10011890 0 EOF\n", none, 77},
		{"other namespace", "1: FLOCK  ADVISORY  WRITE 0 fe:00:10011890 0 EOF\n2: FLOCK  ADVISORY  WRITE -1 fe:00:10011890 0 EOF\n", openBy(0, -1), 0},
		{"other device unconfirmed", "1: FLOCK  ADVISORY  WRITE 15133 00:2e:10011890 0 EOF\n", none, 0},
		{"other device confirmed", "1: FLOCK  ADVISORY  WRITE 9 00:2e:10011890 0 EOF\n2: FLOCK  ADVISORY  WRITE 15133 00:2f:10011890 0 EOF\n", openBy(15133), 15133},
		{"same device first", "1: FLOCK  ADVISORY  WRITE 9 00:2e:10011890 0 EOF\n2: FLOCK  ADVISORY  WRITE 15133 fe:00:10011890 0 EOF\n", openBy(9), 15133},
		{"garbage", "x\n1: FLOCK\n1: FLOCK ADVISORY WRITE 5 fe:00 0 EOF\n1: FLOCK ADVISORY WRITE z fe:00:10011890 0 EOF\n", none, 0},
		{"empty", "", none, 0},
	} {
		locks, _ := proc.ParseLocks([]byte(c.locks)) // "garbage": its lines are left out
		if got := flockHolder(locks, f, c.open); got != c.want {
			t.Errorf("%s: flockHolder = %d, want %d", c.name, got, c.want)
		}
	}
}
