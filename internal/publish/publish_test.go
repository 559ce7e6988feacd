package publish_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/leasetest"
	"github.com/governor-dev/governor/internal/publish"
)

// helperEnv makes the test binary a publisher of the file it names to the
// path helperDstEnv names, with publish.File.
const helperEnv, helperDstEnv = "GOVERNOR_PUBLISH_TEST_SRC", "GOVERNOR_PUBLISH_TEST_DST"

func TestMain(m *testing.M) {
	if src, ok := os.LookupEnv(helperEnv); ok {
		dst := os.Getenv(helperDstEnv)
		if _, err := publish.File(context.Background(), src, dst, publish.Options{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o640); err != nil {
		t.Fatal(err)
	}
}

// temps lists the temporary files in dir.
func temps(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), publish.TempPrefix) {
			out = append(out, e.Name())
		}
	}
	return out
}

func TestPublishLinks(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
	writeFile(t, src, []byte("content\n"))
	res, err := publish.File(context.Background(), src, dst, publish.Options{})
	if err != nil || res.Method != publish.MethodLink || res.Bytes != 8 {
		t.Fatalf("%+v, %v", res, err)
	}
	b, err := os.ReadFile(dst)
	if err != nil || string(b) != "content\n" {
		t.Fatalf("dst %q, %v", b, err)
	}
	fi, err := os.Stat(dst)
	if err != nil || fi.Mode().Perm() != 0o640&^umask() {
		t.Fatalf("dst mode %v, want the source's 0640 (umask %o): %v", fi.Mode(), umask(), err)
	}
	if fi.Sys().(*syscall.Stat_t).Nlink != 1 {
		t.Fatalf("dst has %d links: the temporary name was not removed", fi.Sys().(*syscall.Stat_t).Nlink)
	}
	if left := temps(t, dir); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

func umask() os.FileMode {
	m := syscall.Umask(0)
	syscall.Umask(m)
	return os.FileMode(m)
}

// An existing destination — a file, a dangling symlink — is refused and
// left as it was, whether it exists before the copy or appears during it.
func TestPublishNeverOverwrites(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	writeFile(t, src, []byte("new\n"))
	existing := filepath.Join(dir, "existing")
	writeFile(t, existing, []byte("old\n"))
	dangling := filepath.Join(dir, "dangling")
	if err := os.Symlink(filepath.Join(dir, "nowhere"), dangling); err != nil {
		t.Fatal(err)
	}
	for _, dst := range []string{existing, dangling} {
		_, err := publish.File(context.Background(), src, dst, publish.Options{})
		if !errors.Is(err, publish.ErrExists) || !strings.Contains(err.Error(), dst) {
			t.Fatalf("%s: %v, want ErrExists naming it", dst, err)
		}
	}
	if b, _ := os.ReadFile(existing); string(b) != "old\n" {
		t.Fatalf("existing overwritten: %q", b)
	}
	if _, err := os.Stat(filepath.Join(dir, "nowhere")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the symlink was followed: %v", err)
	}

	// A racing writer creates dst while the content is copied: the link,
	// or the no-replace rename where there is no link, refuses it.
	for _, tc := range []struct {
		name string
		o    publish.Options
	}{
		{"link", publish.Options{}},
		{"rename-noreplace", publish.WithSys(publish.Options{}, func(string, string) error { return syscall.EPERM }, nil)},
	} {
		racy := filepath.Join(dir, "racy-"+tc.name)
		r := &hookReader{r: strings.NewReader("new\n"), hook: func() { writeFile(t, racy, []byte("racer\n")) }}
		if _, err := publish.Publish(context.Background(), r, racy, tc.o); !errors.Is(err, publish.ErrExists) {
			t.Fatalf("%s: racing writer: %v, want ErrExists", tc.name, err)
		}
		if b, _ := os.ReadFile(racy); string(b) != "racer\n" {
			t.Fatalf("%s: the racing writer's file was overwritten: %q", tc.name, b)
		}
	}
	if left := temps(t, dir); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

// hookReader calls hook once, at its first read.
type hookReader struct {
	r    *strings.Reader
	once sync.Once
	hook func()
}

func (h *hookReader) Read(p []byte) (int, error) {
	h.once.Do(h.hook)
	return h.r.Read(p)
}

// Without hard links (link fails as on exFAT), the atomic no-replace
// rename is used; without that too, the checked rename.
func TestPublishFallbacks(t *testing.T) {
	noLink := func(string, string) error { return &os.LinkError{Op: "link", Err: syscall.EPERM} }
	noRename := func(string, string) error { return syscall.EINVAL }
	for _, tc := range []struct {
		name           string
		link, renameNR func(string, string) error
		want           publish.Method
	}{
		{"EPERM", noLink, nil, publish.MethodRenameNoReplace},
		{"ENOTSUP", func(string, string) error { return syscall.ENOTSUP }, nil, publish.MethodRenameNoReplace},
		{"no renameat2", noLink, noRename, publish.MethodRenameChecked},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
			writeFile(t, src, []byte("content\n"))
			o := publish.WithSys(publish.Options{}, tc.link, tc.renameNR)
			res, err := publish.File(context.Background(), src, dst, o)
			if err != nil || res.Method != tc.want {
				t.Fatalf("%+v, %v; want method %s", res, err, tc.want)
			}
			if b, err := os.ReadFile(dst); err != nil || string(b) != "content\n" {
				t.Fatalf("dst %q, %v", b, err)
			}
			if left := temps(t, dir); len(left) != 0 {
				t.Fatalf("temporary files left: %v", left)
			}
			// And an existing destination is still refused.
			if _, err := publish.File(context.Background(), src, dst, o); !errors.Is(err, publish.ErrExists) {
				t.Fatalf("second publish: %v, want ErrExists", err)
			}
		})
	}
	// Any other link error is an error, not a reason to rename.
	dir := t.TempDir()
	dst := filepath.Join(dir, "dst")
	o := publish.WithSys(publish.Options{}, func(string, string) error { return syscall.EIO }, nil)
	if _, err := publish.Publish(context.Background(), strings.NewReader("x"), dst, o); !errors.Is(err, syscall.EIO) {
		t.Fatalf("EIO: %v", err)
	}
	if _, err := os.Lstat(dst); !errors.Is(err, os.ErrNotExist) || len(temps(t, dir)) != 0 {
		t.Fatalf("after EIO: dst %v, temps %v", err, temps(t, dir))
	}
}

// A lease no longer held refuses the publish (ErrLeaseLost); a held one
// lets it through.
func TestPublishLease(t *testing.T) {
	g := leasetest.FileGovernor(t, filepath.Join(t.TempDir(), "state"), governor.Options{Project: "pubtest"})
	l, err := g.Acquire(context.Background(), "release", governor.AcquireOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	lease := &publish.Lease{Governor: g, Resource: "release", ID: l.ID()}
	if _, err := publish.Publish(context.Background(), strings.NewReader("1"), filepath.Join(dir, "a"), publish.Options{Lease: lease}); err != nil {
		t.Fatalf("held lease: %v", err)
	}
	// Released while the content is copied: nothing is published.
	r := &hookReader{r: strings.NewReader("2"), hook: func() { _ = l.Release() }}
	_, err = publish.Publish(context.Background(), r, filepath.Join(dir, "b"), publish.Options{Lease: lease})
	if !errors.Is(err, governor.ErrLeaseLost) || !strings.Contains(err.Error(), "release@"+l.ID()) {
		t.Fatalf("lost lease: %v, want ErrLeaseLost naming it", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "b")); !errors.Is(err, os.ErrNotExist) || len(temps(t, dir)) != 0 {
		t.Fatalf("after the refusal: dst %v, temps %v", err, temps(t, dir))
	}
}

// Stale temporary files: removed when their writer is proven dead; kept
// when it is alive, unknown, on another host, or not ours.
func TestPublishRemovesOnlyAbandonedTemps(t *testing.T) {
	dir := t.TempDir()
	// A dead writer: a process that has exited, with its real start time.
	c := exec.Command("true")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	deadPID := c.Process.Pid
	deadStart := startTime(t, deadPID)
	_ = c.Wait()
	livePID := os.Getpid()
	liveStart := startTime(t, livePID)
	tag := ownTag(t)
	names := map[string]bool{ // name -> removed
		fmt.Sprintf("%s%s.%d.%d.aaaa.tmp", publish.TempPrefix, tag, deadPID, deadStart):            true,
		fmt.Sprintf("%s%s.%d.%d.bbbb.tmp", publish.TempPrefix, tag, livePID, liveStart):            false, // alive
		fmt.Sprintf("%s%s.%d.%d.cccc.tmp", publish.TempPrefix, "0123456789ab", deadPID, deadStart): false, // another host or boot
		fmt.Sprintf("%s%s.%d.%d.dddd.tmp", publish.TempPrefix, tag, livePID, liveStart+1):          true,  // pid reused
		fmt.Sprintf("%s%s.%d.0.eeee.tmp", publish.TempPrefix, tag, deadPID):                        false, // start unknown
		publish.TempPrefix + "garbage.tmp":                                                         false,
		fmt.Sprintf("%s%s.%d.%d.ffff", publish.TempPrefix, tag, deadPID, deadStart):                false, // not our suffix
	}
	for n := range names {
		writeFile(t, filepath.Join(dir, n), []byte("partial"))
	}
	// Even a publish refused for an existing destination cleans up.
	writeFile(t, filepath.Join(dir, "dst"), nil)
	res, err := publish.Publish(context.Background(), strings.NewReader("x"), filepath.Join(dir, "dst"), publish.Options{})
	if !errors.Is(err, publish.ErrExists) {
		t.Fatalf("%v, want ErrExists", err)
	}
	for n, removed := range names {
		_, err := os.Lstat(filepath.Join(dir, n))
		if gone := errors.Is(err, os.ErrNotExist); gone != removed {
			t.Errorf("%s: removed %v, want %v", n, gone, removed)
		}
	}
	if len(res.Stale) != 2 {
		t.Errorf("reported stale %v, want 2", res.Stale)
	}
}

// ownTag learns this host's tag from the name of a temporary file made by
// a publish whose link is refused.
func ownTag(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	var tag string
	o := publish.WithSys(publish.Options{}, func(oldname, _ string) error {
		rest := strings.TrimPrefix(filepath.Base(oldname), publish.TempPrefix)
		tag, _, _ = strings.Cut(rest, ".")
		return syscall.EIO
	}, nil)
	_, _ = publish.Publish(context.Background(), strings.NewReader("x"), filepath.Join(dir, "dst"), o)
	if tag == "" || tag == "unknown" {
		t.Skip("no host identity here (no /proc): stale temporary files are never removed")
	}
	return tag
}

func startTime(t *testing.T, pid int) uint64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	var start uint64
	fmt.Sscan(f[19], &start)
	return start
}

// A publisher SIGKILLed at random points, hundreds of times: every
// destination is absent or complete, never partial, and after the next
// publish no temporary file is left.
func TestPublishSIGKILL(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	content := bytes.Repeat([]byte("0123456789abcdef"), 1<<17) // 2 MiB
	writeFile(t, src, content)
	out := filepath.Join(dir, "out")
	if err := os.Mkdir(out, 0o700); err != nil {
		t.Fatal(err)
	}
	helper := func(dst string) *exec.Cmd {
		c := exec.Command(os.Args[0], "-test.run=^$")
		c.Env = append(os.Environ(), helperEnv+"="+src, helperDstEnv+"="+dst, "GORACE=atexit_sleep_ms=0")
		return c
	}
	// How long a whole publish takes, process start included: the kills
	// land uniformly over that span, and a little after.
	full := time.Hour
	for i := range 3 {
		start := time.Now()
		if b, err := helper(filepath.Join(out, fmt.Sprintf("warm%d", i))).CombinedOutput(); err != nil {
			t.Fatalf("helper: %v: %s", err, b)
		}
		full = min(full, time.Since(start))
	}
	// Kills that land during the copy for certain, whatever the machine's
	// load: the publisher reads a pipe the test feeds half the content
	// into, and is killed once its temporary file has bytes.
	for i := range 5 {
		killMidCopy(t, out, content, helper, i)
	}
	// Then kills at random points of whole publishes from a file.
	var killedEarly, killedMidway, completed int
	deadline := time.Now().Add(8 * time.Second)
	n := 0
	for ; n < 300 && time.Now().Before(deadline); n++ {
		dst := filepath.Join(out, fmt.Sprintf("dst%d", n))
		c := helper(dst)
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		wait := time.NewTimer(time.Duration(rand.Int64N(int64(full + full/10))))
		<-wait.C
		_ = c.Process.Kill()
		_ = c.Wait()
		b, err := os.ReadFile(dst)
		switch {
		case errors.Is(err, os.ErrNotExist) && slices.ContainsFunc(temps(t, out), func(n string) bool {
			return strings.Contains(n, fmt.Sprintf(".%d.", c.Process.Pid))
		}):
			killedMidway++
		case errors.Is(err, os.ErrNotExist):
			killedEarly++
		case err != nil:
			t.Fatal(err)
		case !bytes.Equal(b, content):
			t.Fatalf("kill %d: %s is partial: %d of %d bytes", n, dst, len(b), len(content))
		default:
			completed++
		}
	}
	t.Logf("%d kills in %v (a whole publish: %v): %d before the temporary file, %d during the copy, %d after the publish",
		n, time.Since(deadline.Add(-8*time.Second)), full, killedEarly, killedMidway, completed)
	if _, err := publish.File(context.Background(), src, filepath.Join(out, "final"), publish.Options{}); err != nil {
		t.Fatal(err)
	}
	if left := temps(t, out); len(left) != 0 {
		t.Fatalf("temporary files left after the next publish: %v", left)
	}
}

// killMidCopy starts a publisher of a pipe to out/mid<i>, writes half of
// content into the pipe, SIGKILLs the publisher once its temporary file
// holds bytes, and checks that the destination is absent and the
// temporary file left (for the next publish to remove).
func killMidCopy(t *testing.T, out string, content []byte, helper func(dst string) *exec.Cmd, i int) {
	t.Helper()
	fifo := filepath.Join(t.TempDir(), "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(out, fmt.Sprintf("mid%d", i))
	c := helper(dst)
	c.Env = append(c.Env, helperEnv+"="+fifo) // the last value wins
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0) // until the publisher opens it
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Write(content[:len(content)/2]); err != nil {
		t.Fatal(err)
	}
	var tmp string
	for deadline := time.Now().Add(time.Minute); tmp == ""; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("publisher %d: no temporary file with bytes in %s after a minute: %v", c.Process.Pid, out, temps(t, out))
		}
		for _, n := range temps(t, out) {
			if fi, err := os.Stat(filepath.Join(out, n)); err == nil && fi.Size() > 0 && strings.Contains(n, fmt.Sprintf(".%d.", c.Process.Pid)) {
				tmp = n
			}
		}
	}
	_ = c.Process.Kill()
	_ = c.Wait()
	if _, err := os.Lstat(dst); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("killed during the copy, yet %s: %v", dst, err)
	}
	if _, err := os.Lstat(filepath.Join(out, tmp)); err != nil {
		t.Fatalf("the killed publisher's temporary file %s: %v", tmp, err)
	}
}

// Eight publishers of one destination at once: exactly one wins, the
// others are refused, and the destination is the winner's whole content.
func TestPublishConcurrentWriters(t *testing.T) {
	dir := t.TempDir()
	dst := filepath.Join(dir, "dst")
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			content := strings.Repeat(fmt.Sprintf("writer %d\n", i), 10000)
			_, errs[i] = publish.Publish(context.Background(), strings.NewReader(content), dst, publish.Options{})
		})
	}
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Fatalf("writers %d and %d both published", winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, publish.ErrExists):
			t.Fatalf("writer %d: %v", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("nobody published")
	}
	if b, _ := os.ReadFile(dst); string(b) != strings.Repeat(fmt.Sprintf("writer %d\n", winner), 10000) {
		t.Fatalf("dst is not writer %d's content (%d bytes)", winner, len(b))
	}
	if left := temps(t, dir); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}
