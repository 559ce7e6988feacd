package faults_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/redistest"
	"github.com/governor-dev/governor/internal/usertest"
)

// Issue 24.3: without a cgroup (the portable path; non-root; macOS) the
// watchdog found the tree only by the run id in each process's
// environment, so a worker started through `sh -c 'env -i … worker'`
// worked on beside the next holder when governor was stopped or killed.
// The watchdog now knows the tree from the members governor sends with
// each plan, the leader's process group and parent links.

// envClearedWorker is a command whose worker, the shell's child, has
// cleared its environment: it carries no run id.
func (w *runWorld) envClearedWorker(work string) []string {
	return []string{"sh", "-c", `env -i "$@"; exit $?`, "sh",
		"PATH=" + os.Getenv("PATH"), helperEnv + "=progress", "OUT=" + w.out, "WHO=first", "WORK=" + work, w.testBin}
}

// forEachEnvClearWorld is forEachWorldInParallel, and each backend again
// as a second Unix user (their own, each), who gets no cgroup on Linux
// either: the case of the issue, which the portable path only stands in
// for.
func forEachEnvClearWorld(t *testing.T, lease string, fn func(t *testing.T, w *runWorld)) {
	forEachWorldInParallel(t, lease, fn)
	for _, kind := range []string{"file", "redis"} {
		t.Run(kind+"/non-root", func(t *testing.T) {
			t.Parallel()
			fn(t, newUserRunWorld(t, kind, lease))
		})
	}
}

// newUserRunWorld is a runWorld whose runs are a second Unix user's, in a
// directory of theirs (usertest.SharedDir), with copies of governor and
// of this test binary they can execute. The world's backend (for
// status) is set on Redis only: root does not open another user's state
// dir.
func newUserRunWorld(t *testing.T, kind, lease string) *runWorld {
	u := usertest.New(t)
	shared := usertest.SharedDir(t)
	own := func(p string) {
		if err := os.Chown(p, u.UID, u.GID); err != nil {
			t.Fatal(err)
		}
	}
	mkdir := func(name string) string {
		p := filepath.Join(shared, name)
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		own(p)
		return p
	}
	file := func(name string, b []byte, mode os.FileMode) string {
		p := filepath.Join(shared, name)
		if err := os.WriteFile(p, b, mode); err != nil {
			t.Fatal(err)
		}
		own(p)
		return p
	}
	readAll := func(p string) []byte {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	project := uniq("runkill")
	w := &runWorld{t: t, kind: kind, user: u, dir: mkdir("work"),
		bin:     file("governor", readAll(governorBin(t)), 0o755),
		testBin: file("faults.test", readAll(os.Args[0]), 0o755),
		out:     file("progress", nil, 0o600),
		key:     governor.Key{Project: project, Resource: "heavy"}}
	cfg := file("exec-defaults.yaml", []byte("project: "+project+"\n"+lease), 0o600)
	w.args = []string{"--config", cfg}
	switch kind {
	case "file":
		w.args = append(w.args, "--backend", "file", "--dir", mkdir("state"))
	default:
		s := redistest.Start(t)
		w.args = append(w.args, "--backend", "redis", "--redis-url", s.URL())
		w.backend = backend(t, client(t, s.Addr))
	}
	w.env = cleanEnv("OUT="+w.out, "HOME="+mkdir("home"))
	return w
}

// Governor is stopped (SIGSTOP) past its deadline: the watchdog stops
// the env -i worker by it; the next run's work never overlaps.
func TestEnvClearedWorkerGovernorStopped(t *testing.T) {
	t.Parallel()
	forEachEnvClearWorld(t, "lease:\n  ttl: 3s\n  heartbeat: 500ms\n", func(t *testing.T, w *runWorld) {
		// The members line after the worker was attributed (a scan a
		// second, a plan every heartbeat) is not needed: the group and
		// the parent links hold it too.
		w.pausedGovernorNeverOverlaps(w.envClearedWorker("2m"))
	})
}

// Governor alone is killed (SIGKILL): its watchdog, whose pipe reaches
// end of file, kills the env -i worker before the slot is free (file
// backend: the lease file the worker inherited; Redis: the watchdog is
// the declared owner); the next run's work never overlaps.
func TestEnvClearedWorkerGovernorKilled(t *testing.T) {
	t.Parallel()
	forEachEnvClearWorld(t, "lease:\n  ttl: 30s\n", func(t *testing.T, w *runWorld) {
		first, out, errb := w.run("first", nil, nil, w.envClearedWorker("2m")...)
		expectLine(t, out, "working", time.Minute)
		eventually(t, 20*time.Second, "the first command's progress", func() bool { return len(progressSpans(t, w.out)) >= 5 })
		if err := first.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		w.second()
		checkSpans(t, progressSpans(t, w.out), 1)
		_ = errb // written to by the watchdog, which may outlive governor
	})
}

// A worker that left the tree altogether — its own session (setsid), its
// environment cleared, orphaned when the shell exits — is found by no
// scan on the portable path. On the file backend it still holds the
// lease file it inherited: the run checks that lock before releasing
// and keeps the slot, renewed, until the worker has exited (before, the
// run returned at once and the next was granted beside the worker).
func TestEscapedWorkerKeepsLeaseFileSlot(t *testing.T) {
	t.Parallel()
	for _, portable := range []bool{false, true} {
		name := "file"
		if portable {
			name += "/portable"
		}
		t.Run(name, func(t *testing.T) {
			w := newRunWorld(t, "file", portable, "lease:\n  ttl: 30s\n")
			cmd := []string{"sh", "-c", `(setsid env -i "$@" &); sleep 2; exit 0`, "sh",
				"PATH=" + os.Getenv("PATH"), helperEnv + "=progress", "OUT=" + w.out, "WHO=first", "WORK=5s", os.Args[0]}
			first, out, errb := w.run("first", nil, nil, cmd...)
			go func() {
				for range out {
				}
			}()
			eventually(t, time.Minute, "the first command's progress", func() bool {
				b, _ := os.ReadFile(w.out)
				return strings.Count(string(b), "\n") >= 3
			})
			w.second()
			if code := waitExit(t, first, errb); code != 0 {
				t.Fatalf("first run: exit %d\n%s", code, errb)
			}
			checkSpans(t, progressSpans(t, w.out), 1)
			if !portable {
				return // the cgroup held the worker: the tree was not gone
			}
			if !strings.Contains(errb.String(), "still holds the lease file") {
				t.Fatalf("first run did not say why it kept the slot:\n%s", errb)
			}
		})
	}
}
