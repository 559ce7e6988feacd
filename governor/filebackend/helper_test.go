package filebackend_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/filebackend"
)

// Environment of a helper process.
const (
	envRole     = "GOVERNOR_FILEBACKEND_HELPER"
	envDir      = "GOVERNOR_FB_DIR"
	envProject  = "GOVERNOR_FB_PROJECT"
	envResource = "GOVERNOR_FB_RESOURCE"
	envOut      = "GOVERNOR_FB_OUT"
	envWorkers  = "GOVERNOR_FB_WORKERS"
	envRounds   = "GOVERNOR_FB_ROUNDS"
	envInherit  = "GOVERNOR_FB_INHERIT"
	envPolicy   = "GOVERNOR_FB_POLICY" // "1": race under raceLimitPolicy
)

// TestHelperProcess is not a test: the tests below run the test binary
// again with envRole set, as the other OS processes of their scenarios.
func TestHelperProcess(t *testing.T) {
	role := os.Getenv(envRole)
	if role == "" {
		return
	}
	err := runHelper(role)
	if err != nil {
		fmt.Fprintf(os.Stderr, "helper %s: %v\n", role, err)
		os.Exit(1)
	}
	os.Exit(0)
}

func runHelper(role string) error {
	b, err := filebackend.New(os.Getenv(envDir), filebackend.Options{})
	if err != nil {
		return err
	}
	key := governor.Key{Project: os.Getenv(envProject), Resource: os.Getenv(envResource)}
	switch role {
	case "race":
		return helperRace(b, key)
	case "crash":
		return helperCrash(b, key)
	case "hold":
		return helperHold(b, key)
	case "wait":
		return helperWait(b, key)
	case "pairs":
		return helperPairs(b, key)
	case "lock":
		return helperLock(os.Getenv(envDir), key)
	}
	return fmt.Errorf("unknown role %q", role)
}

func monotonic() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// helperRace: workers goroutines each take the resource (limit 2, wait
// mode) rounds times and write their holding intervals, on the machine's
// monotonic clock, to the output file.
func helperRace(b *filebackend.Backend, key governor.Key) error {
	g, err := governor.New(b, governor.Options{Project: key.Project})
	if err != nil {
		return err
	}
	defer g.Close()
	workers, _ := strconv.Atoi(os.Getenv(envWorkers))
	rounds, _ := strconv.Atoi(os.Getenv(envRounds))
	// A bound for a hung helper, not a timing claim: under load 25 the
	// whole race took more than the 2 minutes this once was.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var mu sync.Mutex
	var out strings.Builder
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for i := range workers {
		wg.Go(func() {
			for j := 0; j < rounds; j++ {
				o := governor.AcquireOptions{Limit: 2, Mode: governor.Wait}
				class, fair := "-", "-"
				if os.Getenv(envPolicy) == "1" {
					class, fair = []string{"critical", "default", "batch"}[(i+j)%3], "k"+strconv.Itoa(i%3)
					o.Limit, o.Policy, o.Priority, o.FairKey = 3, raceLimitPolicy, class, fair
				}
				l, err := g.Acquire(ctx, key.Resource, o)
				if err != nil {
					errs <- err
					return
				}
				start := monotonic()
				time.Sleep(200 * time.Microsecond)
				end := monotonic()
				if err := l.Release(); err != nil {
					errs <- err
					return
				}
				mu.Lock()
				fmt.Fprintf(&out, "%d %d %s %s\n", start, end, class, fair)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return err
	}
	return os.WriteFile(os.Getenv(envOut), []byte(out.String()), 0o600)
}

// raceLimitPolicy is the queue policy of the race under policies
// (limit 3): critical reserves 1, batch is capped at 1, a fair key holds
// at most 2.
var raceLimitPolicy = governor.Policy{Classes: []governor.Class{{Name: "critical", Reserve: 1}, {Name: "default"}, {Name: "batch", Cap: 1}},
	MaxOvertakes: 3, FairCap: 2}

// helperCrash takes and frees the resource (limit 2) as fast as it can
// from four goroutines, two waiting and two failing fast, until killed.
// It prints "ready" after its first grant.
func helperCrash(b *filebackend.Backend, key governor.Key) error {
	g, err := governor.New(b, governor.Options{Project: key.Project})
	if err != nil {
		return err
	}
	var once sync.Once
	errs := make(chan error, 4)
	for i := 0; i < 4; i++ {
		mode := governor.Fail
		if i%2 == 0 {
			mode = governor.Wait
		}
		go func() {
			for {
				l, err := g.Acquire(context.Background(), key.Resource, governor.AcquireOptions{Limit: 2, Mode: mode})
				if errors.Is(err, governor.ErrBusy) {
					continue
				}
				if err != nil {
					errs <- err
					return
				}
				once.Do(func() { fmt.Println("ready") })
				if err := l.Release(); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	return <-errs
}

// helperHold takes the resource (limit 1) on the backend directly, prints
// "held ID TOKEN" and waits to be killed. With envInherit set it first
// starts `sleep` with the lease file inherited and prints "child PID".
func helperHold(b *filebackend.Backend, key governor.Key) error {
	id := fmt.Sprintf("hold-%d", os.Getpid())
	res, err := b.Acquire(context.Background(), governor.Request{Key: key, ID: id, Limit: 1, Weight: 1,
		TTL: time.Minute, Mode: governor.Fail, QueueTTL: time.Minute})
	if err != nil {
		return err
	}
	if res.Outcome != governor.Granted {
		return fmt.Errorf("outcome %v", res.Outcome)
	}
	if os.Getenv(envInherit) != "" {
		f := b.LeaseFile(key, id)
		if f == nil {
			return errors.New("no lease file")
		}
		cmd := exec.Command("sleep", "600")
		cmd.ExtraFiles = []*os.File{f}
		if err := cmd.Start(); err != nil {
			return err
		}
		fmt.Printf("child %d\n", cmd.Process.Pid)
	}
	fmt.Printf("held %s %d\n", id, res.Token)
	select {}
}

// helperWait queues on the resource (limit 1) on the backend directly,
// listening for its wake-up, prints "queued ID" and waits to be killed,
// never claiming a grant.
func helperWait(b *filebackend.Backend, key governor.Key) error {
	id := fmt.Sprintf("wait-%d", os.Getpid())
	_, stop := b.Notify(context.Background(), key, id)
	defer stop()
	res, err := b.Acquire(context.Background(), governor.Request{Key: key, ID: id, Limit: 1, Weight: 1,
		TTL: time.Minute, Mode: governor.Wait, QueueTTL: time.Minute})
	if err != nil {
		return err
	}
	if res.Outcome != governor.Queued {
		return fmt.Errorf("outcome %v", res.Outcome)
	}
	fmt.Printf("queued %s\n", id)
	select {}
}

// helperPairs says "ready", waits for a line on stdin, then takes and
// frees the resource (limit 1, wait mode: mutual exclusion, as flock)
// rounds times through Governor, and says "done".
func helperPairs(b *filebackend.Backend, key governor.Key) error {
	g, err := governor.New(b, governor.Options{Project: key.Project})
	if err != nil {
		return err
	}
	defer g.Close()
	rounds, _ := strconv.Atoi(os.Getenv(envRounds))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return err
	}
	for i := 0; i < rounds; i++ {
		l, err := g.Acquire(ctx, key.Resource, governor.AcquireOptions{Limit: 1, Mode: governor.Wait})
		if err != nil {
			return err
		}
		if err := l.Release(); err != nil {
			return err
		}
	}
	fmt.Println("done")
	return nil
}

// helper is a running helper process.
type helper struct {
	t     testing.TB
	cmd   *exec.Cmd
	in    io.WriteCloser // the helper's stdin
	lines chan string
	done  chan struct{}
}

func startHelper(t testing.TB, role, dir string, key governor.Key, env ...string) *helper {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), envRole+"="+role, envDir+"="+dir,
		envProject+"="+key.Project, envResource+"="+key.Resource)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &helper{t: t, cmd: cmd, in: in, lines: make(chan string, 16), done: make(chan struct{})}
	go func() {
		defer close(h.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			h.lines <- sc.Text()
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	t.Cleanup(func() { h.kill() })
	return h
}

// line returns the helper's next line of output.
func (h *helper) line() string {
	h.t.Helper()
	select {
	case l, ok := <-h.lines:
		if !ok {
			h.t.Fatalf("helper %v exited without saying what it did", h.cmd.Args)
		}
		return l
	case <-time.After(60 * time.Second):
		h.t.Fatalf("helper %v silent for a minute", h.cmd.Args)
	}
	return ""
}

// kill SIGKILLs the helper and reaps it; it is a no-op the second time.
func (h *helper) kill() {
	select {
	case <-h.done:
		return
	default:
	}
	close(h.done)
	_ = h.cmd.Process.Signal(syscall.SIGKILL)
	_ = h.cmd.Wait()
}
