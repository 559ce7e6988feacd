//go:build linux

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor/proc"
	"github.com/governor-dev/governor/internal/proctest"
	"github.com/governor-dev/governor/internal/redistest"
)

// TestKilledSoakLeavesNothing: the soak killed -9 in the middle of its
// load, while one of its protected commands is stopped (as its faults
// stop them), leaves nothing of its own running (shell loops, clients
// and their bridges, governor runs, watchdogs and their commands,
// redis-server) and no mount (the full-disk fault's tmpfs). Before its
// namespace, its redis-server, shell loops and Python client ran on,
// the stopped command stayed stopped, and the tmpfs stayed mounted.
// Root only: the namespace is what makes it whole (contain.go).
func TestKilledSoakLeavesNothing(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the soak cleans up whole only as root (a PID and mount namespace of its own)")
	}
	base := t.TempDir()
	soakBin := filepath.Join(base, "soak")
	if out, err := exec.Command("go", "build", "-o", soakBin, ".").CombinedOutput(); err != nil {
		t.Fatalf("building the soak: %v\n%s", err, out)
	}
	gov, err := proctest.BuildGovernor(base)
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	backends := []string{"file"}
	if ok, err := redistest.Available(); err != nil {
		t.Fatal(err)
	} else if ok {
		backends = append(backends, "redis")
	}
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			tmp := filepath.Join(base, "tmp-"+backend)
			if err := os.Mkdir(tmp, 0o700); err != nil {
				t.Fatal(err)
			}
			c := exec.Command(soakBin, "-duration", "10m", "-backend", backend, "-seed", "1", "-bin", gov, "-root", root)
			c.Env = append(os.Environ(), "TMPDIR="+tmp)
			var out proctest.SyncBuffer
			c.Stdout, c.Stderr = &out, &out
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			killed := false
			defer func() {
				if !killed {
					_ = c.Process.Kill()
					_ = c.Wait()
				}
				for pid := range soakProcs(tmp) { // what the test found left, after its verdict
					if start, err := proc.StartTime(pid); err == nil {
						_ = proc.Kill(pid, start, syscall.SIGKILL)
					}
				}
				for _, m := range soakMounts(tmp) {
					_ = syscall.Unmount(m, syscall.MNT_DETACH)
				}
			}()
			// The load is up: a shell loop, a command of a governor run
			// (stopped, as a fault would), and the server on Redis.
			var work int
			deadline := time.Now().Add(3 * time.Minute)
			for {
				left := soakProcs(tmp)
				work = 0
				shell, server := false, backend != "redis"
				for pid, cmd := range left {
					switch {
					case strings.Contains(cmd, "soak-shell"):
						shell = true
					case strings.HasPrefix(cmd, soakBin+" "+workArg+" "):
						work = pid
					case strings.HasPrefix(cmd, "redis-server"):
						server = true
					}
				}
				if shell && server && work != 0 && syscall.Kill(work, syscall.SIGSTOP) == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the soak's load did not start within 3m: %v\n%s", left, out.String())
				}
				time.Sleep(100 * time.Millisecond)
			}
			killed = true
			if err := c.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			_ = c.Wait()
			// Killed with it, or ended by its own bound: the shell's
			// acquire waits 20 s at most.
			deadline = time.Now().Add(time.Minute)
			for {
				left, mounts := soakProcs(tmp), soakMounts(tmp)
				if len(left) == 0 && len(mounts) == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("a minute after a kill -9 of the soak, left running: %v; mounted: %q\nits output:\n%s", left, mounts, out.String())
				}
				time.Sleep(200 * time.Millisecond)
			}
		})
	}
}

// soakProcs returns the living processes, by pid with their command
// lines, whose command line, environment, executable or working
// directory is under dir (redis-server rewrites its command line; it
// works in its directory).
func soakProcs(dir string) map[int]string {
	all, _ := proc.List()
	out := map[int]string{}
	for _, p := range all {
		if p.PID == os.Getpid() || p.Zombie() {
			continue
		}
		d := "/proc/" + strconv.Itoa(p.PID) + "/"
		cmd, _ := os.ReadFile(d + "cmdline")
		env, _ := os.ReadFile(d + "environ")
		exe, _ := os.Readlink(d + "exe")
		cwd, _ := os.Readlink(d + "cwd")
		if bytes.Contains(cmd, []byte(dir)) || bytes.Contains(env, []byte(dir)) || strings.HasPrefix(exe, dir) || strings.HasPrefix(cwd, dir) {
			out[p.PID] = strings.TrimSpace(string(bytes.ReplaceAll(cmd, []byte{0}, []byte{' '})))
		}
	}
	return out
}

// soakMounts returns the mount points under dir the machine sees.
func soakMounts(dir string) []string {
	b, _ := os.ReadFile("/proc/self/mountinfo")
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 4 && strings.HasPrefix(f[4], dir) {
			out = append(out, f[4])
		}
	}
	return out
}
