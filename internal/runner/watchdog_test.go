package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/governor-dev/governor/config"
	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/eventkind"
	"github.com/governor-dev/governor/governor/filebackend"
	"github.com/governor-dev/governor/governor/proc"
	"github.com/governor-dev/governor/internal/connect"
	"github.com/governor-dev/governor/internal/proctest"
)

func TestKnownTreeFind(t *testing.T) {
	// pids far above any real one: never the test process or its parent.
	const L = 900000
	info := func(pid, ppid, pgid int, start uint64) proc.Info {
		return proc.Info{PID: pid, PPID: ppid, PGID: pgid, Start: start, State: 'S'}
	}
	snap := []proc.Info{
		info(L, 1, L, 50),       // the leader
		info(L+1, L, L, 60),     // its child
		info(L+2, 1, L, 70),     // an orphan of the group (env -i, parent gone)
		info(L+3, 1, L+3, 80),   // unrelated
		info(L+4, L+2, L+4, 90), // the orphan's child, in a group of its own
		info(L+5, L, L+5, 40),   // "child" older than the leader: a link through a reused pid
	}
	cases := []struct {
		name    string
		members string
		snap    []proc.Info
		want    []int
	}{
		{"leader alive", fmt.Sprintf("members %d:50", L), snap, []int{L, L + 1, L + 2, L + 4}},
		{"leader gone, an orphan known", fmt.Sprintf("members %d:50 %d:70", L, L+2), snap[1:], []int{L + 1, L + 2, L + 4}},
		{"leader's pid reused, nothing known alive", fmt.Sprintf("members %d:50", L), append([]proc.Info{info(L, 1, L, 99)}, snap[1:]...), nil},
		{"marked only", "", snap[3:4], []int{L + 3}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var k knownTree
			var marked []proc.Info
			if c.members != "" {
				if err := k.parseMembers(c.members); err != nil {
					t.Fatal(err)
				}
			} else {
				marked = c.snap
			}
			var got []int
			for _, p := range k.find(c.snap, marked) {
				got = append(got, p.PID)
			}
			if fmt.Sprint(sortedInts(got)) != fmt.Sprint(sortedInts(c.want)) {
				t.Fatalf("found %v, want %v", got, c.want)
			}
		})
	}
}

func sortedInts(a []int) []int {
	out := append([]int(nil), a...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func TestParseMembersRefusesBadInput(t *testing.T) {
	for _, line := range []string{"members", "members 12", "members x:1", "members 1:5", "members 12:-1", "nope 12:1"} {
		var k knownTree
		if err := k.parseMembers(line); err == nil {
			t.Errorf("%q: no error", line)
		}
	}
}

// watchWorld is a watchdog run in this process on a fake plan clock,
// guarding a real child (sleep) known to it as the tree's leader.
type watchWorld struct {
	t      *testing.T
	child  *exec.Cmd
	r, w   *os.File // the watchdog's end of the pipe, governor's
	clock  atomic.Int64
	stderr proctest.SyncBuffer
	exited chan int
	waited chan error
}

func newWatchWorld(t *testing.T) *watchWorld {
	ww := &watchWorld{t: t, exited: make(chan int, 1), waited: make(chan error, 1)}
	ww.clock.Store(int64(time.Hour))
	ww.child = exec.Command("sleep", "600")
	ww.child.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := ww.child.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { ww.waited <- ww.child.Wait() }()
	t.Cleanup(func() { _ = ww.child.Process.Kill() })
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	ww.r, ww.w = r, w
	t.Cleanup(func() { w.Close(); r.Close() })
	saved := planClock
	planClock = func() time.Duration { return time.Duration(ww.clock.Load()) }
	t.Cleanup(func() { planClock = saved })
	s, err := proc.Stat(ww.child.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	ww.send(fmt.Sprintf("members %d:%d", s.PID, s.Start))
	return ww
}

func (ww *watchWorld) start() {
	go func() { ww.exited <- watch("test-run", ww.r, &ww.stderr, make(chan os.Signal)) }()
}

func (ww *watchWorld) send(line string) {
	if _, err := ww.w.WriteString(line + "\n"); err != nil {
		ww.t.Fatal(err)
	}
}

// plan sends a plan whose TERM and KILL are at kill on the fake clock.
func (ww *watchWorld) plan(kill time.Duration) {
	ww.send(fmt.Sprintf("%s %d %d %s", msgDeadline, kill, kill, clockSleep))
}

// waitKilled waits for the guarded process to end, failing unless the
// watchdog SIGKILLed it past its deadline.
func (ww *watchWorld) waitKilled() {
	select {
	case err := <-ww.waited:
		if ee, ok := err.(*exec.ExitError); !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			ww.t.Fatalf("the guarded process ended with %v, want SIGKILL", err)
		}
	case <-time.After(time.Minute):
		ww.t.Fatalf("the watchdog did not kill the tree after the clock passed its deadline\n%s", ww.stderr.String())
	}
}

func (ww *watchWorld) done() int {
	ww.send(msgDone)
	select {
	case code := <-ww.exited:
		return code
	case <-time.After(time.Minute):
		ww.t.Fatalf("the watchdog did not end after done\n%s", ww.stderr.String())
	}
	return -1
}

// Issue 24.8: the plan is kept on a clock that runs on through a suspend
// (proc.SleepClock). A suspend past the deadline is seen as the clock
// jumping ahead while no wait of this process has run out: the watchdog
// must act on it within pollCap, not when a timer armed on the stopped
// clock would have fired (an hour later here).
func TestWatchdogActsOnDeadlinePassedInSuspend(t *testing.T) {
	ww := newWatchWorld(t)
	now := time.Duration(ww.clock.Load())
	ww.plan(now + time.Hour)
	ww.start()
	ww.clock.Store(int64(now + 2*time.Hour)) // the machine was suspended for two hours
	ww.waitKilled()
	if code := ww.done(); code != ExitOK {
		t.Fatalf("watchdog exit %d", code)
	}
	if msg := ww.stderr.String(); !strings.Contains(msg, "by the leases' deadline") || !strings.Contains(msg, "no process of it is left") {
		t.Fatalf("the watchdog's message: %q", msg)
	}
}

// Issue 24.5: a watchdog resumed after a stop finds in its pipe both the
// plan whose deadline has passed and the newer ones governor sent while
// it was stopped. It reads them all before acting: the run, renewed
// throughout, is not killed.
func TestWatchdogResumedReadsNewerPlansFirst(t *testing.T) {
	ww := newWatchWorld(t)
	now := time.Duration(ww.clock.Load())
	ww.plan(now + time.Second)
	for i := range 20 {
		ww.plan(now + time.Hour + time.Duration(i)*time.Second)
	}
	ww.clock.Store(int64(now + time.Minute)) // the first plan's deadline has passed
	ww.start()
	if code := ww.done(); code != ExitOK {
		t.Fatalf("watchdog exit %d", code)
	}
	select {
	case err := <-ww.waited:
		t.Fatalf("the guarded process ended (%v): the watchdog acted on a stale plan\n%s", err, ww.stderr.String())
	default:
	}
	if msg := ww.stderr.String(); msg != "" {
		t.Fatalf("the watchdog said %q", msg)
	}
}

// recordLine is the record line of one lease of key in store.
func recordLine(t *testing.T, store connect.Store, key governor.Key, id string, token int64) string {
	b, err := json.Marshal(watchdogRecord{Store: store, Leases: []recordedLease{{key.Project, key.Resource, id, token}}})
	if err != nil {
		t.Fatal(err)
	}
	return msgRecord + " " + string(b)
}

// Issue 24.5: a watchdog that kills a tree records why, as an
// eventkind.WatchdogKill on the lease it guards, in the store governor named.
func TestWatchdogRecordsItsKill(t *testing.T) {
	dir := t.TempDir()
	b, err := filebackend.New(dir, filebackend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	key := governor.Key{Project: "p", Resource: "heavy"}
	ww := newWatchWorld(t)
	ww.send(recordLine(t, connect.Store{Backend: config.BackendFile, Dir: dir}, key, "lease-1", 42))
	now := time.Duration(ww.clock.Load())
	ww.plan(now - time.Second) // the deadline has passed: no renewal came
	ww.start()
	ww.waitKilled()
	if code := ww.done(); code != ExitOK {
		t.Fatalf("watchdog exit %d\n%s", code, ww.stderr.String())
	}
	evs, err := b.Events(context.Background(), key, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].Kind != eventkind.WatchdogKill || evs[0].LeaseID != "lease-1" || evs[0].Token != 42 ||
		!strings.Contains(evs[0].Detail, "run test-run: no lease renewal came by the leases' deadline") {
		t.Fatalf("events %+v; want one %s of lease-1 (token 42) saying why\n%s", evs, eventkind.WatchdogKill, ww.stderr.String())
	}
}

// A store the watchdog cannot reach costs the event, not the kill: the
// tree is killed first, and the failure to record is said.
func TestWatchdogKillsWhenItCannotRecord(t *testing.T) {
	ww := newWatchWorld(t)
	ww.send(recordLine(t, connect.Store{Backend: config.BackendRedis, RedisURL: "redis://127.0.0.1:1"}, governor.Key{Project: "p", Resource: "heavy"}, "lease-1", 42))
	ww.plan(time.Duration(ww.clock.Load()) - time.Second)
	ww.start()
	ww.waitKilled()
	if code := ww.done(); code != ExitOK {
		t.Fatalf("watchdog exit %d", code)
	}
	if msg := ww.stderr.String(); !strings.Contains(msg, "killed 1 processes") || !strings.Contains(msg, "could not record the "+eventkind.WatchdogKill+" event") {
		t.Fatalf("the watchdog's message: %q", msg)
	}
}

// A watchdog whose record waits on the lock of a resource's state held
// by a stopped process (one SIGSTOPped inside a state write) says who
// holds it, rather than "context deadline exceeded" alone.
func TestWatchdogRecordNamesStoppedLockHolder(t *testing.T) {
	dir := t.TempDir()
	b, err := filebackend.New(dir, filebackend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	key := governor.Key{Project: "p", Resource: "heavy"}
	res, err := b.Acquire(context.Background(), governor.Request{Key: key, ID: "lease-1", Limit: 1, Weight: 1,
		TTL: time.Minute, Mode: governor.Fail, QueueTTL: time.Minute})
	if cerr := b.Close(); err != nil || cerr != nil || res.Outcome != governor.Granted {
		t.Fatalf("acquire: %v %v, close: %v", res.Outcome, err, cerr)
	}
	path := filepath.Join(dir, "p", "heavy", "lock")
	pid := proctest.StoppedLockHolder(t, path)
	ww := newWatchWorld(t)
	ww.send(recordLine(t, connect.Store{Backend: config.BackendFile, Dir: dir}, key, "lease-1", res.Token))
	ww.plan(time.Duration(ww.clock.Load()) - time.Second)
	ww.start()
	ww.waitKilled()
	if code := ww.done(); code != ExitOK {
		t.Fatalf("watchdog exit %d", code)
	}
	want := fmt.Sprintf("could not record the %s event: governor: file backend: the state of heavy (%s) is locked by pid %d (flock, stopped): "+
		"a process stopped inside a state write", eventkind.WatchdogKill, path, pid)
	if msg := ww.stderr.String(); !strings.Contains(msg, "killed 1 processes") || !strings.Contains(msg, want) {
		t.Fatalf("the watchdog's message: %q; want %q", msg, want)
	}
}
