// Package usertest gives a test a second Unix user, to check what
// governor does when another user shares the machine.
package usertest

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// User is a Unix user made for one test.
type User struct {
	Name     string
	UID, GID int
}

// New adds a Unix user (no home, no login shell) and removes it when the
// test ends. It skips the test, saying why, unless the test runs as root
// on a system with useradd: in .ci/run it does.
func New(t testing.TB) *User {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to add a second Unix user (useradd); .ci/run runs it as root")
	}
	if _, err := exec.LookPath("useradd"); err != nil {
		t.Skip("needs useradd to add a second Unix user: ", err)
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := "govtest" + hex.EncodeToString(b[:])
	// useradd refuses to run while another holds the lock on
	// /etc/passwd (exit 10): tests in other packages may add users too.
	var out []byte
	var err error
	for try := 0; try < 20; try++ {
		out, err = exec.Command("useradd", "--no-create-home", "--user-group", "--shell", "/usr/sbin/nologin", name).CombinedOutput()
		if err == nil || !bytes.Contains(out, []byte("lock")) {
			break
		}
		<-time.After(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("useradd %s: %v: %s", name, err, out)
	}
	t.Cleanup(func() {
		// A process of the user that a test killed may still be exiting
		// (userdel: "currently used by process"): end what is left of
		// the user's processes, and try again, within a generous bound.
		for try := 0; try < 100; try++ {
			out, err := exec.Command("userdel", name).CombinedOutput()
			if err != nil && bytes.Contains(out, []byte("used by process")) {
				exec.Command("pkill", "-KILL", "-u", name).Run()
				<-time.After(100 * time.Millisecond)
				continue
			}
			if err == nil || !bytes.Contains(out, []byte("lock")) {
				if err != nil {
					t.Errorf("userdel %s: %v: %s", name, err, out)
				}
				return
			}
			<-time.After(100 * time.Millisecond)
		}
	})
	id := func(flag string) int {
		out, err := exec.Command("id", flag, name).Output()
		if err != nil {
			t.Fatalf("id %s %s: %v", flag, name, err)
		}
		n, err := strconv.Atoi(strings.TrimSpace(string(out)))
		if err != nil {
			t.Fatalf("id %s %s: %q", flag, name, out)
		}
		return n
	}
	return &User{Name: name, UID: id("-u"), GID: id("-g")}
}

// Command is exec.Command running as the user, with no supplementary
// groups.
func (u *User) Command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(u.UID), Gid: uint32(u.GID), Groups: []uint32{}}}
	return cmd
}

// SharedDir returns a new directory that every user may write, as a
// shared working directory is (mode 1777, like /tmp), removed when the
// test ends. Its parent is the system's temporary directory, which every
// user can reach; t.TempDir is private to root.
func SharedDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "governor-shared-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Reachable makes every directory from dir up to / searchable by every
// user, so another user can reach a path under dir. It adds the search
// bits where they are missing and takes nothing away: the system's
// temporary directory keeps its 1777 (setting 0755 on every ancestor, as
// two tests once did, left /tmp unwritable to everyone but root, apt's
// sandbox user among them, for the rest of the machine's life). It skips
// the test, saying why, when a directory cannot be opened up.
func Reachable(t testing.TB, dir string) {
	t.Helper()
	const keep = os.ModePerm | os.ModeSticky | os.ModeSetgid | os.ModeSetuid
	for p := dir; ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if m := fi.Mode() & keep; m&0o011 != 0o011 {
			if err := os.Chmod(p, m|0o055); err != nil {
				t.Skipf("cannot open %s to another user: %v", p, err)
			}
		}
		if p == filepath.Dir(p) {
			return
		}
	}
}
