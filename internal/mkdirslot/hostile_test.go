package mkdirslot_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/governor-dev/governor/internal/mkdirslot"
	"github.com/governor-dev/governor/internal/usertest"
)

// swapScript, run as another user in DIR ($1), swaps slot.d again and
// again for a directory of symbolic links to a root-only file ($2), as
// issue 24.1's attacker did between governor's mkdir and its writes.
const swapScript = `cd "$1" || exit 1
while :; do
	mkdir -p e.$$ && for f in pid cmd .pid.tmp; do ln -sf "$2" e.$$/$f; done
	mv slot.d gone.$$ 2>/dev/null; mv e.$$ slot.d 2>/dev/null; rm -rf gone.$$ 2>/dev/null
done`

// A DIR another user can write without the sticky bit is refused, nothing
// made; in a sticky shared DIR the other user's slot.d of symbolic links
// is held, never written through, and the file it names is never read.
func TestSecondUserCannotRedirectTheSlot(t *testing.T) {
	u := usertest.New(t)
	secret := filepath.Join(t.TempDir(), "root-only")
	if err := os.WriteFile(secret, []byte("TOP-SECRET\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []os.FileMode{0o777, 0o777 | os.ModeSticky} {
		dir := filepath.Join(usertest.SharedDir(t), "heavy-lock")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		hostile := u.Command("sh", "-c", swapScript, "sh", dir, secret)
		hostile.SysProcAttr.Setpgid = true
		if err := hostile.Start(); err != nil {
			t.Fatal(err)
		}
		refused, took, seen := 0, 0, map[string]bool{}
		for range 300 {
			s, h, err := mkdirslot.TryAcquire(dir, os.Getpid(), "root's job")
			switch {
			case errors.Is(err, mkdirslot.ErrUntrustedDir):
				refused++
			case err != nil:
				t.Errorf("mode %v: TryAcquire: %v", mode, err)
			case s != nil:
				took++
				if err := s.Release(); err != nil {
					t.Errorf("mode %v: Release: %v", mode, err)
				}
			default:
				seen[h.Cmd+" | "+h.Raw] = true
			}
		}
		syscall.Kill(-hostile.Process.Pid, syscall.SIGKILL)
		hostile.Wait()
		if b, _ := os.ReadFile(secret); string(b) != "TOP-SECRET\n" {
			t.Fatalf("mode %v: the root-only file was written: %q", mode, b)
		}
		for s := range seen {
			if strings.Contains(s, "TOP-SECRET") {
				t.Errorf("mode %v: the root-only file was disclosed: %q", mode, s)
			}
		}
		if mode&os.ModeSticky == 0 && (refused != 300 || took != 0) {
			t.Errorf("mode %v: refused %d of 300, took %d; want every try refused (ErrUntrustedDir)", mode, refused, took)
		}
		t.Logf("mode %v: refused %d, took %d, saw %v", mode, refused, took, seen)
	}
}

// What is read of slot.d is bounded and never blocks: a FIFO as pid or
// cmd, a link to /dev/zero, a huge cmd file. Each look ends (a generous
// deadline), reads at most a few hundred bytes, and says why a file was
// not read.
func TestReadingTheSlotIsBoundedAndNeverBlocks(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(t *testing.T, slot string)
		want mkdirslot.State
	}{
		{"fifo pid", func(t *testing.T, slot string) { mkfifo(t, filepath.Join(slot, "pid")) }, mkdirslot.Corrupt},
		{"fifo cmd", func(t *testing.T, slot string) {
			mkfifo(t, filepath.Join(slot, "cmd"))
			os.WriteFile(filepath.Join(slot, "pid"), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644)
		}, mkdirslot.Held},
		{"cmd -> /dev/zero", func(t *testing.T, slot string) {
			os.Symlink("/dev/zero", filepath.Join(slot, "cmd"))
			os.WriteFile(filepath.Join(slot, "pid"), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644)
		}, mkdirslot.Held},
		{"pid -> /dev/zero", func(t *testing.T, slot string) { os.Symlink("/dev/zero", filepath.Join(slot, "pid")) }, mkdirslot.Corrupt},
		{"huge cmd", func(t *testing.T, slot string) {
			f, _ := os.Create(filepath.Join(slot, "cmd"))
			f.Truncate(1 << 30)
			f.Close()
			os.WriteFile(filepath.Join(slot, "pid"), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644)
		}, mkdirslot.Held},
		{"slot.d -> elsewhere", func(t *testing.T, slot string) {
			os.Remove(slot)
			os.Symlink(t.TempDir(), slot)
		}, mkdirslot.Corrupt},
	} {
		dir := t.TempDir()
		slot := filepath.Join(dir, "slot.d")
		os.Mkdir(slot, 0o755)
		tc.make(t, slot)
		type got struct {
			h   mkdirslot.Holder
			s   *mkdirslot.Slot
			err error
		}
		done := make(chan got, 1)
		go func() {
			s, h, err := mkdirslot.TryAcquire(dir, os.Getpid(), "me")
			done <- got{h, s, err}
		}()
		select {
		case g := <-done:
			if g.s != nil || g.err != nil || g.h.State != tc.want || len(g.h.Cmd) > 4*256+10 || len(g.h.Raw) > 4*32+10 {
				t.Errorf("%s: TryAcquire = %v, %+.200v, %v; want busy, %v, bounded", tc.name, g.s, g.h, g.err, tc.want)
			}
			t.Logf("%s: %.300s", tc.name, g.h.Describe())
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: TryAcquire still blocked after 30s", tc.name)
		}
	}
}

func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
}
