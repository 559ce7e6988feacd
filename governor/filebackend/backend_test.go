package filebackend_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/eventkind"
	"github.com/governor-dev/governor/governor/filebackend"
	"github.com/governor-dev/governor/governor/proc"
)

func TestDefaultDir(t *testing.T) {
	t.Setenv("GOVERNOR_DIR", "/srv/gov")
	t.Setenv("XDG_STATE_HOME", "/xdg")
	t.Setenv("HOME", "/home/u")
	if d := filebackend.DefaultDir(); d != "/srv/gov" {
		t.Fatalf("with GOVERNOR_DIR: %q", d)
	}
	t.Setenv("GOVERNOR_DIR", "")
	if d := filebackend.DefaultDir(); d != "/xdg/governor" {
		t.Fatalf("with XDG_STATE_HOME: %q", d)
	}
	t.Setenv("XDG_STATE_HOME", "relative") // ignored, as the XDG spec says
	if d := filebackend.DefaultDir(); d != "/home/u/.local/state/governor" {
		t.Fatalf("with HOME: %q", d)
	}
}

func TestNewCreatesPrivateDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "governor")
	b := open(t, dir, filebackend.Options{})
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o700 {
		t.Fatalf("state dir mode %04o, want 0700", fi.Mode().Perm())
	}
	if b.Dir() != dir {
		t.Fatalf("Dir() = %q, want %q", b.Dir(), dir)
	}
}

func TestStateDirRefused(t *testing.T) {
	t.Run("symlink", func(t *testing.T) {
		real := filepath.Join(t.TempDir(), "real")
		if err := os.Mkdir(real, 0o700); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(t.TempDir(), "link")
		if err := os.Symlink(real, link); err != nil {
			t.Fatal(err)
		}
		_, err := filebackend.New(link, filebackend.Options{})
		if err == nil || !strings.Contains(err.Error(), "symlink") || !strings.Contains(err.Error(), link) {
			t.Fatalf("New on a symlink: %v", err)
		}
	})
	t.Run("dangling symlink", func(t *testing.T) {
		link := filepath.Join(t.TempDir(), "link")
		if err := os.Symlink(filepath.Join(t.TempDir(), "nowhere"), link); err != nil {
			t.Fatal(err)
		}
		if _, err := filebackend.New(link, filebackend.Options{}); err == nil {
			t.Fatal("New accepted a dangling symlink")
		}
	})
	t.Run("other owner", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("needs root to give a directory away")
		}
		dir := filepath.Join(t.TempDir(), "theirs")
		mkdirOwned(t, dir, 0o700, 65534, 65534)
		_, err := filebackend.New(dir, filebackend.Options{})
		if err == nil || !strings.Contains(err.Error(), "owned by uid 65534") {
			t.Fatalf("New on a directory of another user: %v", err)
		}
	})
	t.Run("writable by others", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "open")
		mkdirMode(t, dir, 0o777)
		_, err := filebackend.New(dir, filebackend.Options{})
		if err == nil || !strings.Contains(err.Error(), "chmod 700") {
			t.Fatalf("New on a world-writable directory: %v", err)
		}
	})
	t.Run("file", func(t *testing.T) {
		f := filepath.Join(t.TempDir(), "file")
		if err := os.WriteFile(f, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := filebackend.New(f, filebackend.Options{}); err == nil {
			t.Fatal("New accepted a regular file")
		}
	})
}

// TestSymlinkInsideNotFollowed: a project directory replaced by a
// symlink is refused, and nothing is written where it points.
func TestSymlinkInsideNotFollowed(t *testing.T) {
	dir := t.TempDir()
	b := open(t, dir, filebackend.Options{})
	target := t.TempDir()
	if err := os.Symlink(target, filepath.Join(dir, "proj")); err != nil {
		t.Fatal(err)
	}
	key := governor.Key{Project: "proj", Resource: "heavy"}
	_, err := b.Acquire(ctxT(t), req(key, 1, 1, governor.Fail))
	if err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Fatalf("Acquire through a symlinked project dir: %v", err)
	}
	if _, err := b.Status(ctxT(t), key); err == nil {
		t.Fatal("Status followed a symlink")
	}
	if ents, _ := os.ReadDir(target); len(ents) != 0 {
		t.Fatalf("wrote through the symlink: %v", ents)
	}
	// A state file replaced by a symlink is not read through either.
	key = governor.Key{Project: "p2", Resource: "heavy"}
	mustAcquire(t, b, req(key, 1, 1, governor.Fail), governor.Granted)
	state := filepath.Join(dir, "p2", "heavy", "state")
	secret := filepath.Join(target, "secret")
	if err := os.WriteFile(secret, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(state); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, state); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Status(ctxT(t), key); err == nil || !strings.Contains(err.Error(), state) {
		t.Fatalf("Status through a symlinked state file: %v", err)
	}
}

func TestCorruptStateIsAnError(t *testing.T) {
	for _, c := range []struct {
		name string
		data string
	}{
		{"garbage", "{\"version\":1,\"holders\":[{"},
		{"empty", ""},
		// Holders over the limit are not corrupt: they keep others out
		// until they expire (conformance DamagedOverLimitNotStuck). A
		// holder of no weight would let others in: refused.
		{"weightless holder", `{"version":1,"project":"p","resource":"r","limit":1,"token":5,` +
			`"holders":[{"id":"a","weight":0,"token":4}]}`},
		{"other resource", `{"version":1,"project":"p","resource":"elsewhere","limit":1}`},
		{"newer version", `{"version":99,"project":"p","resource":"r"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, b, key := heldOnce(t)
			path := filepath.Join(dir, "p", "r", "state")
			if err := os.WriteFile(path, []byte(c.data), 0o600); err != nil {
				t.Fatal(err)
			}
			check := func(op string, err error) {
				t.Helper()
				if !errors.Is(err, filebackend.ErrCorrupt) || !errors.Is(err, governor.ErrBackend) ||
					!strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "move the file aside") {
					t.Fatalf("%s on a corrupt state: %v", op, err)
				}
			}
			_, err := b.Acquire(ctxT(t), req(key, 1, 1, governor.Fail))
			check("Acquire", err)
			_, err = b.Status(ctxT(t), key)
			check("Status", err)
			check("Release", b.Release(ctxT(t), key, "a", ""))
			_, err = b.Renew(ctxT(t), governor.Renewal{Key: key, ID: "a", Secret: "", Token: 0, TTL: time.Minute})
			check("Renew", err)
			check("CountLost", b.Record(ctxT(t), key, governor.Event{Kind: eventkind.Lost, LeaseID: "some-lease", Token: 1, Detail: "a test"}))
			got, err := os.ReadFile(path)
			if err != nil || !bytes.Equal(got, []byte(c.data)) {
				t.Fatalf("the corrupt file was changed: %q, %v", got, err)
			}
		})
	}
}

// TestNames: resource names with ':' '/' '%', a leading '.', non-ASCII
// and long ones are kept apart and listed as they were given.
func TestNames(t *testing.T) {
	dir := t.TempDir()
	b := open(t, dir, filebackend.Options{})
	names := []string{
		"provider:anthropic", "a/b", "a%2Fb", "a%2fb", ".hidden", "%2Ehidden", "..", "日本語:テスト",
		strings.Repeat("x", 199) + ":", strings.Repeat("語", 66), strings.Repeat(":", 200),
		strings.Repeat(":", 199) + ";",
	}
	for _, n := range names {
		if err := governor.ValidateResource(n); err != nil {
			t.Fatalf("test name %q is not valid: %v", n, err)
		}
		mustAcquire(t, b, req(governor.Key{Project: "names", Resource: n}, 1, 1, governor.Fail), governor.Granted)
	}
	for _, n := range names {
		st := mustStatus(t, b, governor.Key{Project: "names", Resource: n})
		if st.Used != 1 || len(st.Holders) != 1 {
			t.Fatalf("%q shares state with another name: %+v", n, st)
		}
	}
	got, err := b.Resources(ctxT(t), "names")
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(names)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("Resources = %q, want %q", got, want)
	}
	if got, err := b.Resources(ctxT(t), "none"); err != nil || len(got) != 0 {
		t.Fatalf("Resources of an unknown project = %v, %v", got, err)
	}
	ents, err := os.ReadDir(filepath.Join(dir, "names"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if len(e.Name()) > 255-len("lease.") || strings.HasPrefix(e.Name(), ".") {
			t.Fatalf("unsafe file name %q", e.Name())
		}
	}
}

// TestReadsCreateNothing: calls about resources that were never used
// leave the state dir empty.
func TestReadsCreateNothing(t *testing.T) {
	dir := t.TempDir()
	b := open(t, dir, filebackend.Options{})
	key := governor.Key{Project: "p", Resource: "never"}
	if st := mustStatus(t, b, key); st.Limit != 0 || st.Now.IsZero() {
		t.Fatalf("Status of an unused resource: %+v", st)
	}
	if _, err := b.Renew(ctxT(t), governor.Renewal{Key: key, ID: "x", Secret: "", Token: 0, TTL: time.Minute}); !errors.Is(err, governor.ErrLeaseLost) {
		t.Fatalf("Renew: %v", err)
	}
	if err := b.Release(ctxT(t), key, "x", ""); !errors.Is(err, governor.ErrNotHeld) {
		t.Fatalf("Release: %v", err)
	}
	if err := b.Cancel(ctxT(t), key, "x", ""); err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	if res, err := b.Admin(ctxT(t), key, governor.Action{Kind: eventkind.Reclaimed, IDs: []string{"x"}, Token: 1}); res.Changed || err != nil {
		t.Fatalf("Reclaim: %v, %v", res.Changed, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("reads created %v", ents)
	}
}

// heldOnce opens a backend in a fresh state dir and takes the one slot
// of p/r in it.
func heldOnce(t *testing.T) (string, *filebackend.Backend, governor.Key) {
	t.Helper()
	dir := t.TempDir()
	b := open(t, dir, filebackend.Options{})
	key := governor.Key{Project: "p", Resource: "r"}
	mustAcquire(t, b, req(key, 1, 1, governor.Fail), governor.Granted)
	return dir, b, key
}

// TestLeftoversRemoved: what killed processes leave (a half-written
// temp file, a lease file never recorded, a wake-up pipe nobody listens
// to) is removed by the next state change; a pipe still listened to is
// kept.
func TestLeftoversRemoved(t *testing.T) {
	dir, b, key := heldOnce(t)
	res := filepath.Join(dir, "p", "r")
	if err := os.WriteFile(filepath.Join(res, "state.tmp"), []byte("{\"half"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(res, "lease.ghost"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(res, "wait.ghost"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stop := b.Notify(context.Background(), key, "live")
	defer stop()
	if st := mustStatus(t, b, key); st.Used != 1 {
		t.Fatalf("a leftover temp file was read: %+v", st)
	}
	mustAcquire(t, b, req(key, 1, 1, governor.Fail), governor.Refused)
	var left []string
	ents, _ := os.ReadDir(res)
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "lease.r") {
			left = append(left, e.Name())
		}
	}
	if !slices.Equal(left, []string{"lock", "state", "wait.live"}) {
		t.Fatalf("files after the next access: %v", left)
	}
	stop()
	if _, err := os.Stat(filepath.Join(res, "wait.live")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("stop left the pipe: %v", err)
	}
}

// TestCloseLeavesLeasesToExpire: Close gives up the lease files, but the
// leases still held are not taken for dead: they last their TTL.
func TestCloseLeavesLeasesToExpire(t *testing.T) {
	dir := t.TempDir()
	clock := newFakeClock()
	b1, err := filebackend.New(dir, filebackend.Options{Clock: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	b2 := open(t, dir, filebackend.Options{Clock: clock.now})
	key := governor.Key{Project: "p", Resource: "r"}
	r := req(key, 1, 1, governor.Fail)
	mustAcquire(t, b1, r, governor.Granted)
	if b1.LeaseFile(key, r.ID) == nil {
		t.Fatal("no lease file for a held lease")
	}
	if err := b1.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b1.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := b1.Acquire(ctxT(t), req(key, 1, 1, governor.Fail)); !errors.Is(err, governor.ErrClosed) {
		t.Fatalf("Acquire on a closed backend: %v", err)
	}
	mustAcquire(t, b2, req(key, 1, 1, governor.Fail), governor.Refused)
	clock.advance(2 * time.Minute)
	mustAcquire(t, b2, req(key, 1, 1, governor.Fail), governor.Granted)
	if c := mustStatus(t, b2, key).Counters; c.ReclaimedExpiry != 1 || c.ReclaimedDead != 0 {
		t.Fatalf("counters %+v, want one expiry", c)
	}
}

// TestLeaseFile: a lease file exists for a lease held by this Backend,
// including a grant claimed after waiting, and goes with the lease.
func TestLeaseFile(t *testing.T) {
	dir := t.TempDir()
	b1 := open(t, dir, filebackend.Options{})
	b2 := open(t, dir, filebackend.Options{})
	key := governor.Key{Project: "p", Resource: "r"}
	h := req(key, 1, 1, governor.Fail)
	mustAcquire(t, b1, h, governor.Granted)
	if f := b1.LeaseFile(key, h.ID); f == nil {
		t.Fatal("no lease file")
	}
	if b2.LeaseFile(key, h.ID) != nil || b1.LeaseFile(key, "other") != nil {
		t.Fatal("a lease file for a lease not held here")
	}
	w := req(key, 1, 1, governor.Wait)
	mustAcquire(t, b2, w, governor.Queued)
	if err := b1.Release(ctxT(t), key, h.ID, ""); err != nil {
		t.Fatal(err)
	}
	if b1.LeaseFile(key, h.ID) != nil {
		t.Fatal("lease file kept after release")
	}
	if b2.LeaseFile(key, w.ID) != nil {
		t.Fatal("lease file before the grant was claimed")
	}
	mustAcquire(t, b2, w, governor.Granted)
	if b2.LeaseFile(key, w.ID) == nil {
		t.Fatal("no lease file for a claimed grant")
	}
	// b1 checks b2's lease file and finds it held.
	mustAcquire(t, b1, req(key, 1, 1, governor.Fail), governor.Refused)
}

// TestStaleBoot: holders and waiters recorded during an earlier boot are
// dead; the next state change drops them.
func TestStaleBoot(t *testing.T) {
	dir, b, key := heldOnce(t)
	mustAcquire(t, b, req(key, 1, 1, governor.Wait), governor.Queued)
	path := filepath.Join(dir, "p", "r", "state")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data = bytes.Replace(data, []byte(`"boot":"`), []byte(`"boot":"earlier-`), 1)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if st := mustStatus(t, b, key); st.Used != 0 || len(st.Waiters) != 0 {
		t.Fatalf("status lists an earlier boot's holders: %+v", st)
	}
	other := open(t, dir, filebackend.Options{})
	mustAcquire(t, other, req(key, 1, 1, governor.Fail), governor.Granted)
	if c := mustStatus(t, b, key).Counters; c.ReclaimedDead != 1 {
		t.Fatalf("counters %+v", c)
	}
}

// TestLockWaitHonoursContext: a call waiting for another process's
// critical section gives up when its context ends.
func TestLockWaitHonoursContext(t *testing.T) {
	dir, b, key := heldOnce(t)
	f, err := os.OpenFile(filepath.Join(dir, "p", "r", "lock"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := b.Acquire(ctx, req(key, 1, 1, governor.Fail)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire while locked: %v", err)
	}
	f.Close()
	mustAcquire(t, b, req(key, 1, 1, governor.Fail), governor.Refused)
}

// TestPIDProofs: with no lease file to go by (its backend closed), the
// Governor's PID check decides: a pid it cannot signal (EPERM) or that
// lives is kept, and so is a missing or nonsense pid, until its TTL;
// a dead pid is reclaimed at once.
func TestPIDProofs(t *testing.T) {
	self := proc.Current()
	initStart, _ := proc.StartTime(1)
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		decl governor.Declaration
		free bool
	}{
		{"pid 1 (EPERM unless root)", governor.Declaration{HostID: self.HostID, PID: 1, StartTime: initStart}, false},
		{"alive", governor.Declaration{HostID: self.HostID, PID: self.PID, StartTime: self.StartTime}, false},
		{"no pid", governor.Declaration{HostID: self.HostID}, false},
		{"negative pid", governor.Declaration{HostID: self.HostID, PID: -7}, false},
		{"pid reused", governor.Declaration{HostID: self.HostID, PID: self.PID, StartTime: self.StartTime + 1}, true},
		{"dead", governor.Declaration{HostID: self.HostID, PID: cmd.Process.Pid}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			clock := newFakeClock()
			key := governor.Key{Project: "p", Resource: "r"}
			holder, err := filebackend.New(dir, filebackend.Options{Clock: clock.now})
			if err != nil {
				t.Fatal(err)
			}
			r := req(key, 1, 1, governor.Fail)
			r.Declaration = c.decl
			mustAcquire(t, holder, r, governor.Granted)
			if err := holder.Close(); err != nil {
				t.Fatal(err)
			}
			g, err := governor.New(open(t, dir, filebackend.Options{Clock: clock.now}), governor.Options{Project: key.Project})
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			l, err := g.Acquire(ctxT(t), key.Resource, governor.AcquireOptions{Limit: 1})
			if c.free {
				if err != nil {
					t.Fatalf("not reclaimed: %v", err)
				}
				_ = l.Release()
				return
			}
			if !errors.Is(err, governor.ErrBusy) {
				t.Fatalf("err = %v, want busy", err)
			}
			clock.advance(2 * time.Minute)
			l, err = g.Acquire(ctxT(t), key.Resource, governor.AcquireOptions{Limit: 1})
			if err != nil {
				t.Fatalf("not free after its TTL: %v", err)
			}
			_ = l.Release()
		})
	}
}

// TestTempOfFirstWriteRemoved: a writer killed during the very first
// write leaves a temp file and no state; the next call removes it even
// when it has nothing to write.
func TestTempOfFirstWriteRemoved(t *testing.T) {
	dir := t.TempDir()
	b := open(t, dir, filebackend.Options{})
	key := governor.Key{Project: "p", Resource: "r"}
	_, stop := b.Notify(context.Background(), key, "w") // makes the directory and its lock
	stop()
	res := filepath.Join(dir, "p", "r")
	if err := os.WriteFile(filepath.Join(res, "state.tmp"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if st := mustStatus(t, b, key); st.Limit != 0 {
		t.Fatalf("status read the temp file: %+v", st)
	}
	if err := b.Release(ctxT(t), key, "nobody", ""); !errors.Is(err, governor.ErrNotHeld) {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(res)
	if len(ents) != 1 || ents[0].Name() != "lock" {
		t.Fatalf("files left: %v", ents)
	}
}
