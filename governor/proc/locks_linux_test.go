package proc

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestLocksLive: locks this process takes show in Locks with their kind,
// mode, pid (-1 for an OFD lock) and the file's inode, and every line of
// the live /proc/locks is in the format ParseLocks reads.
func TestLocksLive(t *testing.T) {
	dir := t.TempDir()
	open := func(name string) (*os.File, uint64) {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		var st unix.Stat_t
		if err := unix.Fstat(int(f.Fd()), &st); err != nil {
			t.Fatal(err)
		}
		return f, st.Ino
	}
	fl, flIno := open("flock")
	if err := unix.Flock(int(fl.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	px, pxIno := open("posix")
	if err := unix.FcntlFlock(px.Fd(), unix.F_SETLK, &unix.Flock_t{Type: unix.F_RDLCK}); err != nil {
		t.Fatal(err)
	}
	ofd, ofdIno := open("ofd")
	if err := unix.FcntlFlock(ofd.Fd(), unix.F_OFD_SETLK, &unix.Flock_t{Type: unix.F_WRLCK}); err != nil {
		t.Fatal(err)
	}

	locks, err := Locks()
	if err != nil {
		t.Fatal(err)
	}
	pid := os.Getpid()
	for _, want := range []struct {
		kind LockKind
		mode LockMode
		pid  int
		ino  uint64
	}{{Flock, LockWrite, pid, flIno}, {Posix, LockRead, pid, pxIno}, {OFD, LockWrite, -1, ofdIno}} {
		found := false
		for _, l := range locks {
			found = found || l.Kind == want.kind && l.Mode == want.mode && l.PID == want.pid && l.Inode == want.ino
		}
		if !found {
			t.Errorf("no %s %s lock of pid %d on inode %d in %+v", want.kind, want.mode, want.pid, want.ino, locks)
		}
	}
}

// TestHoldsExclusiveFlock: a process holding an exclusive flock is told,
// one holding only a shared flock is not.
func TestHoldsExclusiveFlock(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "lock"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pid := os.Getpid()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_SH); err != nil {
		t.Fatal(err)
	}
	if held, err := HoldsExclusiveFlock(pid); held || err != nil {
		t.Errorf("shared flock only: held %v, %v; want false", held, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	if held, err := HoldsExclusiveFlock(pid); !held || err != nil {
		t.Errorf("exclusive flock: held %v, %v; want true", held, err)
	}
}
