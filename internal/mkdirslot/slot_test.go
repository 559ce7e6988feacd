package mkdirslot_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/governor-dev/governor/internal/mkdirslot"
	"github.com/governor-dev/governor/internal/usertest"
)

// helperEnv makes the test binary a TryAcquire on the named directory,
// printing the holder's state: the EPERM test runs it as another user.
const helperEnv = "MKDIRSLOT_TEST_TRY"

func TestMain(m *testing.M) {
	if dir := os.Getenv(helperEnv); dir != "" {
		s, h, err := mkdirslot.TryAcquire(dir, os.Getpid(), "helper")
		switch {
		case err != nil:
			fmt.Println("error", err)
		case s != nil:
			fmt.Println("acquired")
		default:
			fmt.Println("busy", h.State, h.PID)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// makeSlot makes DIR/slot.d as the wrapper does: mkdir, then the pid file
// (pid "" writes none) and the cmd file.
func makeSlot(t *testing.T, dir, pid, cmd string) {
	t.Helper()
	p := filepath.Join(dir, mkdirslot.SlotName)
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	if pid != "" {
		if err := os.WriteFile(filepath.Join(p, "pid"), []byte(pid+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(p, "cmd"), []byte(cmd+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// deadPID returns the pid of a process that has exited and been reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	return c.Process.Pid
}

func TestAcquireWritesTheWrappersFormatAndReleasesOnlyOurs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "heavy-lock")
	s, _, err := mkdirslot.TryAcquire(dir, os.Getpid(), "python eval.py")
	if err != nil || s == nil {
		t.Fatalf("TryAcquire: %v, %v", s, err)
	}
	for name, want := range map[string]string{"pid": strconv.Itoa(os.Getpid()) + "\n", "cmd": "python eval.py\n"} {
		if b, _ := os.ReadFile(filepath.Join(dir, "slot.d", name)); string(b) != want {
			t.Errorf("slot.d/%s = %q, want %q", name, b, want)
		}
	}
	if s2, h, err := mkdirslot.TryAcquire(dir, os.Getpid(), "again"); s2 != nil || err != nil || h.State != mkdirslot.Held || h.Cmd != "python eval.py" {
		t.Errorf("second TryAcquire = %v, %+v, %v; want busy, held by us", s2, h, err)
	}
	if err := s.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "slot.d")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("slot.d after Release: %v", err)
	}

	// A slot.d that is no longer ours is left alone.
	s, _, _ = mkdirslot.TryAcquire(dir, os.Getpid(), "mine")
	os.RemoveAll(filepath.Join(dir, "slot.d"))
	makeSlot(t, dir, "1", "someone else")
	if err := s.Release(); !errors.Is(err, mkdirslot.ErrNotOurs) {
		t.Errorf("Release of a replaced slot.d = %v, want ErrNotOurs", err)
	}
	if h, _ := mkdirslot.Inspect(dir); h.PID != 1 || h.Cmd != "someone else" {
		t.Errorf("the other holder's slot.d was touched: %+v", h)
	}
}

func TestDeadPIDIsReclaimed(t *testing.T) {
	dir := t.TempDir()
	dead := deadPID(t)
	makeSlot(t, dir, strconv.Itoa(dead), "crashed")
	if h, _ := mkdirslot.Inspect(dir); h.State != mkdirslot.Dead || h.PID != dead {
		t.Fatalf("Inspect = %+v, want dead pid %d", h, dead)
	}
	s, h, err := mkdirslot.TryAcquire(dir, os.Getpid(), "next")
	if err != nil || s == nil {
		t.Fatalf("TryAcquire over dead pid %d = %v, %+v, %v; want reclaimed", dead, s, h, err)
	}
	if h, _ := mkdirslot.Inspect(dir); h.PID != os.Getpid() {
		t.Errorf("after reclaim: %+v", h)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("left behind in DIR: %v", entries)
	}
}

// No pid yet, an empty or corrupt pid, a pid that is not positive, and a
// slot.d that is a file: held, never removed.
func TestUnprovenHoldersAreKept(t *testing.T) {
	for _, tc := range []struct {
		name, pid string
		state     mkdirslot.State
	}{
		{"no pid yet", "", mkdirslot.NoPID},
		{"corrupt", "12ab", mkdirslot.Corrupt},
		{"zero", "0", mkdirslot.Corrupt},
		{"negative", "-5", mkdirslot.Corrupt},
		{"alive", strconv.Itoa(os.Getpid()), mkdirslot.Held},
	} {
		dir := t.TempDir()
		makeSlot(t, dir, tc.pid, "x")
		s, h, err := mkdirslot.TryAcquire(dir, os.Getpid(), "me")
		if s != nil || err != nil || h.State != tc.state {
			t.Errorf("%s: TryAcquire = %v, %+v, %v; want busy, %v", tc.name, s, h, err, tc.state)
		}
		if b, err := os.ReadFile(filepath.Join(dir, "slot.d", "cmd")); err != nil || string(b) != "x\n" {
			t.Errorf("%s: slot.d was touched: %q, %v", tc.name, b, err)
		}
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "slot.d"), nil, 0o644)
	if s, h, err := mkdirslot.TryAcquire(dir, os.Getpid(), "me"); s != nil || err != nil || h.State != mkdirslot.Corrupt {
		t.Errorf("slot.d a file: %v, %+v, %v", s, h, err)
	}
}

func TestStuck(t *testing.T) {
	dir := t.TempDir()
	makeSlot(t, dir, "", "x")
	h, _ := mkdirslot.Inspect(dir)
	if h.Stuck(time.Now()) || !h.Stuck(time.Now().Add(mkdirslot.StuckAfter+time.Second)) {
		t.Errorf("Stuck: a fresh no-pid slot.d must not be stuck, an old one must")
	}
	makeSlot(t, dir, strconv.Itoa(os.Getpid()), "x")
	if h, _ := mkdirslot.Inspect(dir); h.Stuck(time.Now().Add(time.Hour)) {
		t.Errorf("a live holder is never stuck")
	}
	if h, err := mkdirslot.Remove(dir); err != nil || h.PID != os.Getpid() {
		t.Errorf("Remove = %+v, %v", h, err)
	}
	if h, _ := mkdirslot.Inspect(dir); h.State != mkdirslot.Free {
		t.Errorf("after Remove: %+v", h)
	}
}

// A pid the checking process may not signal (EPERM) is alive: kept. Not
// root: pid 1. Root may signal anything, so the check runs in this test
// binary started as uid 65534 on a slot.d naming this (root) process.
func TestEPERMIsKept(t *testing.T) {
	dir := t.TempDir()
	if os.Geteuid() != 0 {
		makeSlot(t, dir, "1", "init's")
		if err := syscall.Kill(1, 0); !errors.Is(err, syscall.EPERM) {
			t.Skipf("kill(1, 0) = %v, not EPERM: cannot test EPERM here", err)
		}
		s, h, err := mkdirslot.TryAcquire(dir, os.Getpid(), "me")
		if s != nil || err != nil || h.State != mkdirslot.Held {
			t.Fatalf("EPERM pid 1: %v, %+v, %v; want held", s, h, err)
		}
		return
	}
	const nobody = 65534
	bin := filepath.Join(dir, "helper")
	exe, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, exe, 0o755); err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(dir, "lock")
	makeSlot(t, lock, strconv.Itoa(os.Getpid()), "root's")
	usertest.Reachable(t, dir)
	os.Chmod(lock, 0o777|os.ModeSticky) // shared, as /tmp: only the owner of slot.d may rename it
	c := exec.Command(bin)
	c.Env = append(os.Environ(), helperEnv+"="+lock)
	c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out, err := c.CombinedOutput()
	if err != nil {
		t.Skipf("cannot run a process as uid %d here: %v %s", nobody, err, out)
	}
	if got := strings.TrimSpace(string(out)); got != fmt.Sprintf("busy held %d", os.Getpid()) {
		t.Errorf("uid %d on a slot.d naming root's pid %d: %q; want busy held (EPERM is alive)", nobody, os.Getpid(), got)
	}
	if h, _ := mkdirslot.Inspect(lock); h.PID != os.Getpid() || h.Cmd != "root's" {
		t.Errorf("slot.d was touched: %+v", h)
	}
}

func TestAcquireWaitsForTheWrapper(t *testing.T) {
	dir := t.TempDir()
	makeSlot(t, dir, strconv.Itoa(os.Getpid()), "wrapper")
	var seen []mkdirslot.Holder
	go func() {
		time.Sleep(300 * time.Millisecond)
		os.RemoveAll(filepath.Join(dir, "slot.d"))
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := mkdirslot.Acquire(ctx, dir, os.Getpid(), "me", func(h mkdirslot.Holder) { seen = append(seen, h) })
	if err != nil || s == nil {
		t.Fatalf("Acquire: %v", err)
	}
	if len(seen) == 0 || seen[0].Cmd != "wrapper" {
		t.Errorf("onWait saw %+v; want the wrapper", seen)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel2()
	if _, err := mkdirslot.Acquire(ctx2, dir, os.Getpid(), "me2", nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Acquire on a held slot until the deadline: %v", err)
	}
	if h, _ := mkdirslot.Inspect(dir); h.Cmd != "me" {
		t.Errorf("the timed-out Acquire touched the slot: %+v", h)
	}
}
