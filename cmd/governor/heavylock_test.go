package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/governor-dev/governor/internal/view"
)

// heavyTarget is a file-backend target whose resource heavy is bound to
// the with-heavy-lock slot in the returned directory. With viaEnv, the
// configuration names another directory and $HEAVY_LOCK_DIR moves it.
func heavyTarget(t *testing.T, viaEnv bool) (*target, string, []string) {
	t.Helper()
	lock := filepath.Join(t.TempDir(), "heavy-lock")
	configured, env := lock, []string{}
	if viaEnv {
		configured = filepath.Join(t.TempDir(), "not-this-one")
		env = []string{"HEAVY_LOCK_DIR=" + lock}
	}
	cfg := filepath.Join(t.TempDir(), "exec-defaults.yaml")
	if err := os.WriteFile(cfg, []byte("project: "+runProject+"\nresources:\n  heavy: {limit: 1, mkdir_lock: "+configured+"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return &target{bin: governorBin(t), name: "file", dir: filepath.Join(t.TempDir(), "state"), config: cfg}, lock, env
}

// wrapperPath is the replica of with-heavy-lock in testdata.
func wrapperPath(t *testing.T) string {
	p, err := filepath.Abs(filepath.Join("testdata", "with-heavy-lock"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// governorCmd is governor with tg's flags, env added to a clean
// environment.
func governorCmd(tg *target, env []string, args ...string) *exec.Cmd {
	c := tg.command(args...)
	c.Env = append(c.Env, env...)
	return c
}

// wrapperCmd is the replica wrapper on lock running args.
func wrapperCmd(t *testing.T, lock string, env []string, args ...string) *exec.Cmd {
	c := exec.Command(wrapperPath(t), args...)
	c.Env = append(append(cleanEnv(), "HEAVY_LOCK_DIR="+lock), env...)
	return c
}

// spanScript appends "$0 S NANOS" and, after sleeping $2 seconds, "$0 E
// NANOS" to the file $1.
const spanScript = `echo "$0 S $(date +%s%N)" >> "$1"; sleep "$2"; echo "$0 E $(date +%s%N)" >> "$1"`

func checkDisjoint(t *testing.T, times string, n int) {
	t.Helper()
	spans := readSpans(t, times)
	if len(spans) != n {
		t.Fatalf("%d commands wrote times, want %d", len(spans), n)
	}
	for a, sa := range spans {
		if sa.e == 0 {
			t.Errorf("%s never ended", a)
		}
		for b, sb := range spans {
			if a < b && sa.s < sb.e && sb.s < sa.e {
				t.Errorf("%s %v overlaps %s %v", a, sa, b, sb)
			}
		}
	}
}

func waitForPID(t *testing.T, lock string) string {
	t.Helper()
	var pid []byte
	eventually(t, 30*time.Second, "slot.d/pid", func() bool {
		b, err := os.ReadFile(filepath.Join(lock, "slot.d", "pid"))
		pid = b
		return err == nil && len(b) > 0
	})
	return strings.TrimSpace(string(pid))
}

// The old wrapper and governor run exclude each other on one slot, in
// both directions, and in a free-for-all race everyone gets a turn.
// $HEAVY_LOCK_DIR moves governor's slot as it moves the wrapper's.
func TestHeavyLockSharedWithWrapper(t *testing.T) {
	tg, lock, env := heavyTarget(t, true)
	times := filepath.Join(t.TempDir(), "times")
	rec := filepath.Join(t.TempDir(), "runs.jsonl")

	// The wrapper holds it: governor is refused (fail), then waits.
	w := wrapperCmd(t, lock, nil, "sh", "-c", spanScript, "w1", times, "1")
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	pid := waitForPID(t, lock)
	code, _, errs := execCode(t, governorCmd(tg, env, "run", "--resource", "heavy", "--", "true"))
	if code != 73 || !strings.Contains(errs, "held by pid "+pid) || !strings.Contains(errs, "cmd: sh -c") {
		t.Errorf("run while the wrapper holds it: exit %d, stderr %s; want 73 naming pid %s and its cmd", code, errs, pid)
	}
	code, _, errs = execCode(t, governorCmd(tg, env, "run", "--resource", "heavy", "--if-busy", "skip", "--", "true"))
	if code != 75 {
		t.Errorf("--if-busy skip while the wrapper holds it: exit %d, stderr %s; want 75", code, errs)
	}
	code, out, errs := execCode(t, governorCmd(tg, env, "slots", "heavy"))
	if code != 0 || !strings.Contains(out, "mkdir slot "+filepath.Join(lock, "slot.d")+": held, pid "+pid+", cmd: sh -c") || !strings.Contains(out, "HELD outside governor") {
		t.Errorf("slots while the wrapper holds it: exit %d, stderr %s:\n%s", code, errs, out)
	}
	code, _, errs = execCode(t, governorCmd(tg, env, "run", "--resource", "heavy", "--if-busy", "wait", "--record", rec, "--", "sh", "-c", spanScript, "g1", times, "0.3"))
	if code != 0 {
		t.Fatalf("governor after the wrapper: exit %d, stderr %s", code, errs)
	}
	if err := w.Wait(); err != nil {
		t.Fatal(err)
	}
	if r := readRecords(t, rec); len(r) != 1 || r[0].WaitSeconds < 0.2 {
		t.Errorf("governor's record: %+v; want one that waited for the wrapper", r)
	}

	// governor holds it: the wrapper waits.
	g := governorCmd(tg, env, "run", "--resource", "heavy", "--", "sh", "-c", spanScript, "g2", times, "1")
	var gerr bytes.Buffer
	g.Stderr = &gerr
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	waitForPID(t, lock)
	if code, _, errs := execCode(t, wrapperCmd(t, lock, nil, "sh", "-c", spanScript, "w2", times, "0.3")); code != 0 {
		t.Fatalf("wrapper after governor: exit %d, %s", code, errs)
	}
	if err := g.Wait(); err != nil {
		t.Fatalf("governor: %v, %s", err, &gerr)
	}

	// Everyone at once.
	var wg sync.WaitGroup
	codes := make([]int, 6)
	msgs := make([]string, 6)
	for i := range 6 {
		name := "race-w" + strconv.Itoa(i)
		c := wrapperCmd(t, lock, nil, "sh", "-c", spanScript, name, times, "0.2")
		if i%2 == 1 {
			name = "race-g" + strconv.Itoa(i)
			c = governorCmd(tg, env, "run", "--resource", "heavy", "--if-busy", "wait", "--", "sh", "-c", spanScript, name, times, "0.2")
		}
		wg.Go(func() { codes[i], _, msgs[i] = execCode(t, c) })
	}
	wg.Wait()
	for i, c := range codes {
		if c != 0 {
			t.Errorf("racer %d: exit %d, %s", i, c, msgs[i])
		}
	}
	checkDisjoint(t, times, 10)
	if entries, _ := os.ReadDir(lock); len(entries) != 0 {
		t.Errorf("left in the lock directory: %v", entries)
	}
}

// What governor writes is the wrapper's form; the command sees
// HEAVY_LOCK_HELD naming the pid slot.d names; release removes slot.d.
func TestHeavyLockWritesTheWrappersForm(t *testing.T) {
	tg, lock, env := heavyTarget(t, false)
	code, out, errs := execCode(t, governorCmd(tg, env, "run", "--resource", "heavy", "--", "sh", "-c",
		`echo "$HEAVY_LOCK_HELD"; cat "$0/slot.d/pid" "$0/slot.d/cmd"`, lock))
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 3 || lines[0] != lines[1] || lines[0] == "" || !strings.HasPrefix(lines[2], "sh -c ") {
		t.Fatalf("exit %d, stderr %s, stdout %q; want HEAVY_LOCK_HELD = slot.d/pid and the cmd", code, errs, out)
	}
	if _, err := os.Stat(filepath.Join(lock, "slot.d")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("slot.d after the run: %v", err)
	}
}

// A slot.d without a pid, with a corrupt one or with a live one is held:
// refused (73, 75, 73 after --wait-timeout) and left as it was; one naming
// a dead pid is reclaimed.
func TestHeavyLockKeepsUnprovenReclaimsDead(t *testing.T) {
	tg, lock, env := heavyTarget(t, false)
	live := exec.Command("sleep", "60")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { live.Process.Kill(); live.Wait() }()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, pid, want string
	}{
		{"no pid", "", "has no readable pid yet"},
		{"corrupt", "4x2", `not a positive pid ("4x2")`},
		{"live", strconv.Itoa(live.Process.Pid), "held by pid " + strconv.Itoa(live.Process.Pid)},
	} {
		slot := filepath.Join(lock, "slot.d")
		os.RemoveAll(slot)
		if err := os.MkdirAll(slot, 0o755); err != nil {
			t.Fatal(err)
		}
		if tc.pid != "" {
			os.WriteFile(filepath.Join(slot, "pid"), []byte(tc.pid+"\n"), 0o644)
		}
		os.WriteFile(filepath.Join(slot, "cmd"), []byte(tc.name+"\n"), 0o644)
		for _, flags := range []struct {
			args []string
			code int
		}{{nil, 73}, {[]string{"--if-busy", "skip"}, 75}, {[]string{"--wait-timeout", "600ms"}, 73}} {
			args := append(append([]string{"run", "--resource", "heavy"}, flags.args...), "--", "true")
			code, _, errs := execCode(t, governorCmd(tg, env, args...))
			if code != flags.code || !strings.Contains(errs, tc.want) {
				t.Errorf("%s %q: exit %d, stderr %s; want %d and %q", tc.name, flags.args, code, errs, flags.code, tc.want)
			}
		}
		if b, err := os.ReadFile(filepath.Join(slot, "cmd")); err != nil || string(b) != tc.name+"\n" {
			t.Errorf("%s: slot.d was touched: %q, %v", tc.name, b, err)
		}
	}
	os.WriteFile(filepath.Join(lock, "slot.d", "pid"), []byte(strconv.Itoa(dead.Process.Pid)+"\n"), 0o644)
	if code, _, errs := execCode(t, governorCmd(tg, env, "run", "--resource", "heavy", "--", "true")); code != 0 {
		t.Errorf("slot.d of dead pid %d: exit %d, stderr %s; want it reclaimed", dead.Process.Pid, code, errs)
	}
	if entries, _ := os.ReadDir(lock); len(entries) != 0 {
		t.Errorf("left in the lock directory: %v", entries)
	}
}

// Nesting both ways: governor inside the wrapper takes nothing and does
// not wait; the wrapper inside governor runs at once.
func TestHeavyLockNesting(t *testing.T) {
	tg, lock, env := heavyTarget(t, false)
	inner := append([]string{tg.bin}, tg.global()...)
	args := append(append([]string{}, inner...), "run", "--resource", "heavy", "--", "sh", "-c", `echo "inner GOVERNOR_HELD=$GOVERNOR_HELD"`)
	code, out, errs := execCode(t, wrapperCmd(t, lock, nil, args...))
	if code != 0 || !strings.Contains(out, "inner GOVERNOR_HELD=\n") {
		t.Errorf("governor inside the wrapper: exit %d, stdout %q, stderr %s; want 0 without acquiring", code, out, errs)
	}
	code, out, errs = execCode(t, governorCmd(tg, append(env, "HEAVY_LOCK_DIR="+lock), "run", "--resource", "heavy", "--timeout", "20s", "--",
		wrapperPath(t), "sh", "-c", "echo inner ran"))
	if code != 0 || out != "inner ran\n" {
		t.Errorf("wrapper inside governor: exit %d, stdout %q, stderr %s; want 0 (124: the wrapper waited for its ancestor)", code, out, errs)
	}
}

// A slot.d without a readable pid for long is shown as stuck with the
// command that clears it; that command clears it; a live pid is refused.
func TestHeavyLockStuckAndTakeoverForce(t *testing.T) {
	tg, lock, env := heavyTarget(t, false)
	slot := filepath.Join(lock, "slot.d")
	if err := os.MkdirAll(slot, 0o755); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	os.Chtimes(slot, old, old)
	code, out, errs := execCode(t, governorCmd(tg, env, "slots"))
	if code != 0 || !strings.Contains(out, "STUCK") || !strings.Contains(out, "governor takeover heavy --force") {
		t.Errorf("slots with a stuck slot.d: exit %d, stderr %s:\n%s", code, errs, out)
	}
	if _, err := os.Stat(slot); err != nil {
		t.Fatalf("slots removed slot.d: %v", err)
	}
	if code, out, errs := execCode(t, governorCmd(tg, env, "takeover", "heavy", "--force")); code != 0 || !strings.Contains(out, "removed "+slot) {
		t.Errorf("takeover heavy --force: exit %d, stdout %q, stderr %s", code, out, errs)
	}
	if _, err := os.Stat(slot); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("slot.d after takeover --force: %v", err)
	}
	if code, _, errs := execCode(t, governorCmd(tg, env, "takeover", "heavy", "--force")); code != 73 || !strings.Contains(errs, "nothing to take over") {
		t.Errorf("takeover --force of a free slot: exit %d, stderr %s; want 73", code, errs)
	}
	os.MkdirAll(slot, 0o755)
	os.WriteFile(filepath.Join(slot, "pid"), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644)
	if code, _, errs := execCode(t, governorCmd(tg, env, "takeover", "heavy", "--force")); code != 73 || !strings.Contains(errs, "is alive") {
		t.Errorf("takeover --force of a live holder: exit %d, stderr %s; want 73", code, errs)
	}
	if _, err := os.Stat(slot); err != nil {
		t.Errorf("a live holder's slot.d was removed: %v", err)
	}
}

// governor acquire cannot hold the wrapper's slot: it refuses a bound
// resource instead of taking a lease the wrapper would not see.
func TestHeavyLockAcquireRefused(t *testing.T) {
	tg, lock, env := heavyTarget(t, false)
	code, _, errs := execCode(t, governorCmd(tg, env, "acquire", "heavy"))
	if code != 125 || !strings.Contains(errs, "resources.heavy.mkdir_lock") {
		t.Errorf("acquire heavy: exit %d, stderr %s; want 125 naming resources.heavy.mkdir_lock", code, errs)
	}
	if _, err := os.Stat(filepath.Join(lock, "slot.d")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("slot.d: %v", err)
	}
}

// A slot.d naming a pid governor may not signal (EPERM) is held, never
// reclaimed. Root may signal anything, so governor runs as uid 65534 on a
// slot.d naming this (root) process; not root, pid 1 is another user's.
func TestHeavyLockEPERMKept(t *testing.T) {
	tg, lock, env := heavyTarget(t, false)
	base := t.TempDir()
	pid := strconv.Itoa(os.Getpid())
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		const nobody = 65534
		cred = &syscall.Credential{Uid: nobody, Gid: nobody}
		exe, err := os.ReadFile(tg.bin)
		if err != nil {
			t.Fatal(err)
		}
		tg.bin = filepath.Join(base, "governor")
		if err := os.WriteFile(tg.bin, exe, 0o755); err != nil {
			t.Fatal(err)
		}
		tg.dir = filepath.Join(base, "state")
		for _, p := range []string{tg.dir, lock} {
			if err := os.MkdirAll(p, 0o777); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(p, nobody, nobody); err != nil {
				t.Skipf("cannot give %s to uid %d: %v", p, nobody, err)
			}
		}
		for _, f := range []string{base, filepath.Dir(lock), filepath.Dir(tg.config)} {
			for p := f; p != "/"; p = filepath.Dir(p) {
				if err := os.Chmod(p, 0o755); err != nil {
					t.Skipf("cannot open %s to uid %d: %v", p, nobody, err)
				}
			}
		}
		os.Chmod(tg.config, 0o644)
	} else {
		if err := syscall.Kill(1, 0); !errors.Is(err, syscall.EPERM) {
			t.Skipf("kill(1, 0) = %v, not EPERM: no other user's process to name here", err)
		}
		pid = "1"
	}
	as := func(args ...string) *exec.Cmd {
		c := governorCmd(tg, env, args...)
		c.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		c.Env = append(c.Env, "HOME="+base, "XDG_STATE_HOME="+base)
		return c
	}
	if code, _, errs := execCode(t, as("slots")); code != 0 {
		t.Skipf("governor cannot run as uid 65534 here: %s", errs)
	}
	slot := filepath.Join(lock, "slot.d")
	os.MkdirAll(slot, 0o755)
	os.WriteFile(filepath.Join(slot, "pid"), []byte(pid+"\n"), 0o644)
	if cred != nil { // governor could remove it, were it wrong
		for _, p := range []string{slot, filepath.Join(slot, "pid")} {
			os.Chown(p, int(cred.Uid), int(cred.Gid))
		}
	}
	code, _, errs := execCode(t, as("run", "--resource", "heavy", "--", "true"))
	if code != 73 || !strings.Contains(errs, "held by pid "+pid) {
		t.Errorf("slot.d naming pid %s, which governor may not signal: exit %d, stderr %s; want 73, held", pid, code, errs)
	}
	if b, err := os.ReadFile(filepath.Join(slot, "pid")); err != nil || string(b) != pid+"\n" {
		t.Errorf("slot.d was touched: %q, %v", b, err)
	}
}

// governor killed with SIGKILL leaves slot.d naming its watchdog, which
// dies once the tree is dead: the next run reclaims the slot, and the
// wrapper's replica (which never reclaims) is not needed to clear it.
func TestHeavyLockAfterSIGKILL(t *testing.T) {
	tg, lock, env := heavyTarget(t, false)
	g := governorCmd(tg, env, "run", "--resource", "heavy", "--", "sleep", "60")
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	pid := waitForPID(t, lock)
	if pid == strconv.Itoa(g.Process.Pid) {
		t.Errorf("slot.d names governor (%s), not its watchdog", pid)
	}
	g.Process.Kill()
	g.Wait()
	code, _, errs := execCode(t, governorCmd(tg, env, "run", "--resource", "heavy", "--wait-timeout", "60s", "--", "sh", "-c", `cat "$0/slot.d/pid"`, lock))
	if code != 0 {
		t.Fatalf("run after governor was killed: exit %d, stderr %s; want the slot reclaimed", code, errs)
	}
	if entries, _ := os.ReadDir(lock); len(entries) != 0 {
		t.Errorf("left in the lock directory: %v", entries)
	}
}

// --quiet prints nothing when the wrapper's slot is not acquired.
func TestHeavyLockQuiet(t *testing.T) {
	tg, lock, env := heavyTarget(t, false)
	os.MkdirAll(filepath.Join(lock, "slot.d"), 0o755)
	for _, flags := range [][]string{{"--if-busy", "skip"}, {"--if-busy", "fail"}, {"--wait-timeout", "600ms"}} {
		args := append(append([]string{"run", "--quiet", "--resource", "heavy"}, flags...), "--", "true")
		if code, out, errs := execCode(t, governorCmd(tg, env, args...)); (code != 75 && code != 73) || out != "" || errs != "" {
			t.Errorf("run --quiet %q: exit %d, stdout %q, stderr %q; want 73 or 75 and nothing printed", flags, code, out, errs)
		}
	}
}

// slots --json: the slot under its resource, held outside governor.
func TestHeavyLockSlotsJSON(t *testing.T) {
	tg, lock, env := heavyTarget(t, false)
	slot := filepath.Join(lock, "slot.d")
	os.MkdirAll(slot, 0o755)
	os.WriteFile(filepath.Join(slot, "pid"), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644)
	os.WriteFile(filepath.Join(slot, "cmd"), []byte("python3 eval.py\n"), 0o644)
	code, out, errs := execCode(t, governorCmd(tg, env, "--json", "slots", "heavy"))
	var got view.Slots
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil || len(got.Resources) != 1 {
		t.Fatalf("slots --json: exit %d, %v, stderr %s:\n%s", code, err, errs, out)
	}
	m := got.Resources[0].MkdirSlot
	if m == nil || m.Path != slot || m.State != "held" || m.PID != os.Getpid() || m.Cmd != "python3 eval.py" || !m.OutsideGovernor || m.Stuck {
		t.Errorf("mkdir_slot = %+v; want held outside governor by pid %d", m, os.Getpid())
	}
}
