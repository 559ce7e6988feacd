package filebackend_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/filebackend"
	"github.com/governor-dev/governor/internal/usertest"
)

// A parent of the state dir that someone else can write lets them swap
// the state dir: New refuses it, naming the parent (issue 18 point 10).
func TestStateDirParentWritableRefused(t *testing.T) {
	parent := filepath.Join(t.TempDir(), "open")
	mkdirMode(t, parent, 0o777) // not sticky
	dir := filepath.Join(parent, "governor")
	_, err := filebackend.New(dir, filebackend.Options{})
	if err == nil || !strings.Contains(err.Error(), "parent "+parent+" is writable by group or others") {
		t.Fatalf("New under a world-writable parent: %v; want a refusal naming %s", err, parent)
	}

	// Sticky and root's, as /tmp: fine.
	if os.Geteuid() == 0 {
		if err := os.Chmod(parent, 0o777|os.ModeSticky); err != nil {
			t.Fatal(err)
		}
		if _, err := filebackend.New(dir, filebackend.Options{}); err != nil {
			t.Fatalf("New under a sticky root-owned parent: %v", err)
		}
	}
}

func TestStateDirParentOfAnotherUserRefused(t *testing.T) {
	other := usertest.New(t)
	parent := filepath.Join(t.TempDir(), "theirs")
	mkdirOwned(t, parent, 0o755, other.UID, other.GID)
	_, err := filebackend.New(filepath.Join(parent, "governor"), filebackend.Options{})
	if err == nil || !strings.Contains(err.Error(), "parent "+parent+" is owned by uid") {
		t.Fatalf("New under another user's dir: %v; want a refusal naming %s", err, parent)
	}
}

// The state dir swapped after New (same path, another directory) is
// refused at the next critical section.
func TestStateDirReplacedRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "governor")
	b := open(t, dir, filebackend.Options{})
	key := governor.Key{Project: "p", Resource: "r"}
	mustAcquire(t, b, req(key, 1, 1, governor.Fail), governor.Granted)
	if err := os.Rename(dir, dir+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	_, err := b.Acquire(ctxT(t), req(key, 1, 1, governor.Fail))
	if err == nil || !strings.Contains(err.Error(), "was replaced") {
		t.Fatalf("Acquire after the state dir was swapped: %v; want a refusal", err)
	}
}

// As root with a HOME root does not own (sudo keeping a user's HOME), the
// default state dir is /run/governor, not a root-owned dir in that home
// (issue 18 point 11).
func TestRootWithUsersHome(t *testing.T) {
	other := usertest.New(t)
	home := filepath.Join(t.TempDir(), "home")
	mkdirOwned(t, home, 0o700, other.UID, other.GID)
	t.Setenv("GOVERNOR_DIR", "")
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("HOME", home)
	if d := filebackend.DefaultDir(); d != filebackend.RootDir {
		t.Fatalf("root with HOME %s of uid %d: DefaultDir() = %q, want %q", home, other.UID, d, filebackend.RootDir)
	}
	t.Setenv("XDG_STATE_HOME", filepath.Join(home, ".local", "state"))
	if d := filebackend.DefaultDir(); d != filebackend.RootDir {
		t.Fatalf("root with XDG_STATE_HOME in a user's home: DefaultDir() = %q, want %q", d, filebackend.RootDir)
	}
	// A home that root owns is used as it is.
	own := t.TempDir()
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("HOME", own)
	if d, want := filebackend.DefaultDir(), filepath.Join(own, ".local", "state", "governor"); d != want {
		t.Fatalf("root with its own HOME: DefaultDir() = %q, want %q", d, want)
	}
}

// A shared state dir (setgid, 2770, group-owned) is used by every member
// of its group; files in it are 0660 and subdirectories 2770 whatever the
// umask; open to others it is refused.
func TestSharedStateDir(t *testing.T) {
	other := usertest.New(t)
	dir := filepath.Join(usertest.SharedDir(t), "shared")
	mkdirOwned(t, dir, 0o700, 0, other.GID)
	if err := os.Chmod(dir, 0o770|os.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	b := open(t, dir, filebackend.Options{})
	key := governor.Key{Project: "p", Resource: "r"}
	mustAcquire(t, b, req(key, 1, 1, governor.Fail), governor.Granted)
	res := filepath.Join(dir, "p", "r")
	for path, want := range map[string]os.FileMode{
		filepath.Join(dir, "p"):     0o770 | os.ModeSetgid | os.ModeDir,
		res:                         0o770 | os.ModeSetgid | os.ModeDir,
		filepath.Join(res, "lock"):  0o660,
		filepath.Join(res, "state"): 0o660,
	} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != want {
			t.Errorf("%s: mode %v, want %v", path, fi.Mode(), want)
		}
		if fi.Sys().(*syscall.Stat_t).Gid != uint32(other.GID) {
			t.Errorf("%s: gid %d, want the shared dir's %d", path, fi.Sys().(*syscall.Stat_t).Gid, other.GID)
		}
	}

	if err := os.Chmod(dir, 0o777|os.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	if _, err := filebackend.New(dir, filebackend.Options{}); err == nil || !strings.Contains(err.Error(), "open to users outside its group") {
		t.Fatalf("New on a world-writable shared dir: %v; want a refusal", err)
	}
}

// A FIFO planted as a resource's temp file (any member of a shared
// state dir can make one) must not hang the member who next writes the
// state, inside its critical section with the lock held (issue 24.11):
// the write removes it and makes its own temp. Bounded by a generous
// deadline, reported as a hang.
func TestPlantedTempFIFO(t *testing.T) {
	dir := t.TempDir()
	b := open(t, dir, filebackend.Options{})
	key := governor.Key{Project: "p", Resource: "r"}
	first := req(key, 1, 1, governor.Fail)
	if res, err := b.Acquire(context.Background(), first); err != nil || res.Outcome != governor.Granted {
		t.Fatalf("Acquire: %+v, %v", res, err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "p", "r", "state.tmp"), 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- b.Release(context.Background(), key, first.ID, "") }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Release with a FIFO planted as state.tmp: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Release hangs: it opened the FIFO planted as state.tmp for writing, with the lock held")
	}
	if res, err := b.Acquire(context.Background(), req(key, 1, 1, governor.Fail)); err != nil || res.Outcome != governor.Granted {
		t.Fatalf("Acquire after the release: %+v, %v", res, err)
	}
}

// mkdirOwned makes dir with perm and gives it to uid:gid, or fails t.
func mkdirOwned(t *testing.T, dir string, perm os.FileMode, uid, gid int) {
	t.Helper()
	if err := os.Mkdir(dir, perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, uid, gid); err != nil {
		t.Fatal(err)
	}
}

// mkdirMode makes dir with exactly mode, whatever the umask, or fails t.
func mkdirMode(t *testing.T, dir string, mode os.FileMode) {
	t.Helper()
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
}
