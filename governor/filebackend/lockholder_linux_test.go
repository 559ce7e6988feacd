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

// TestReadHolderReadsAgain: a read of /proc/locks that misses the
// holder's line (a lock before it went between two pages of the read)
// is made again; one that never shows it says nobody, after holderReads
// reads.
func TestReadHolderReadsAgain(t *testing.T) {
	f := fileID{dev: unix.Mkdev(0xfe, 0), ino: 10011890}
	held, _ := proc.ParseLocks([]byte("1: FLOCK  ADVISORY  WRITE 15133 fe:00:10011890 0 EOF\n"))
	other, _ := proc.ParseLocks([]byte("1: FLOCK  ADVISORY  WRITE 9 fe:00:77 0 EOF\n"))
	none := func(int, fileID) bool { return false }
	reads := func(pages ...[]proc.Lock) (func() ([]proc.Lock, error), *int) {
		n := 0
		return func() ([]proc.Lock, error) {
			n++
			if n <= len(pages) {
				return pages[n-1], nil
			}
			return held, nil
		}, &n
	}
	read, n := reads(other, other)
	if got := readHolder(read, f, none); got != 15133 || *n != 3 {
		t.Errorf("missed twice, then shown: holder %d after %d reads, want 15133 after 3", got, *n)
	}
	read, n = reads(other, other, other, other)
	if got := readHolder(read, f, none); got != 0 || *n != holderReads {
		t.Errorf("never shown: holder %d after %d reads, want 0 after %d", got, *n, holderReads)
	}
	read, n = reads()
	if got := readHolder(read, f, none); got != 15133 || *n != 1 {
		t.Errorf("shown at once: holder %d after %d reads, want 15133 after 1", got, *n)
	}
}
