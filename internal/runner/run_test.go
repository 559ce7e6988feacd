package runner_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/governor-dev/governor/config"
	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/eventkind"
	"github.com/governor-dev/governor/governor/filebackend"
	"github.com/governor-dev/governor/internal/acquire"
	"github.com/governor-dev/governor/internal/leasetest"
	"github.com/governor-dev/governor/internal/runner"
	"github.com/governor-dev/governor/internal/runner/recordtest"
)

const project = "runnertest"

// fixture is a state dir and the way Run opens a Governor on it.
type fixture struct {
	dir string
	ttl time.Duration
}

func newFixture(t *testing.T) *fixture {
	return &fixture{dir: filepath.Join(t.TempDir(), "state"), ttl: 30 * time.Second}
}

func (f *fixture) governor(t *testing.T, o governor.Options) *governor.Governor {
	t.Helper()
	b, err := filebackend.New(f.dir, filebackend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	o.Project = project
	if o.TTL == 0 {
		o.TTL = f.ttl
	}
	g, err := governor.New(b, o)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// loaded is the configuration of the fixture's state dir: project,
// lease TTL and heavy (limit 1).
func (f *fixture) loaded(t *testing.T) *config.Loaded {
	t.Helper()
	file := filepath.Join(t.TempDir(), "exec-defaults.yaml")
	yaml := fmt.Sprintf("project: %s\nbackend: file\nfile: {dir: %s}\nlease: {ttl: %v}\nresources:\n  heavy: {limit: 1}\n", project, f.dir, f.ttl)
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := config.Load(config.LoadOptions{File: file, Env: []string{"HOME=" + t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// options returns Options for cmd on heavy (limit 1) with a record file,
// in an environment free of the developer's GOVERNOR_* variables.
func (f *fixture) options(t *testing.T, args ...string) (runner.Options, *bytes.Buffer, *bytes.Buffer) {
	var stdout, stderr bytes.Buffer
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOVERNOR_") {
			env = append(env, kv)
		}
	}
	return runner.Options{
		Args: args, Request: acquire.Request{Resources: []string{"heavy"}}, Config: f.loaded(t),
		Record: filepath.Join(t.TempDir(), "runs.jsonl"), Env: env,
		Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr,
	}, &stdout, &stderr
}

func status(t *testing.T, f *fixture, resource string) governor.Status {
	t.Helper()
	g := f.governor(t, governor.Options{})
	defer g.Close()
	st, err := g.Status(context.Background(), resource)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestRunPassesExitCodeEnvironmentAndRecord(t *testing.T) {
	f := newFixture(t)
	o, stdout, stderr := f.options(t, "sh", "-c", `echo "$GOVERNOR_HELD|$GOVERNOR_TOKEN|$GOVERNOR_SESSION|$GOVERNOR_RUN_IDS"; exit 7`, "--api-key", "sk-secretsecretsecret12")
	o.Session = "s1"
	if code := runner.Run(context.Background(), o); code != 7 {
		t.Fatalf("exit %d, want 7; stderr %s", code, stderr)
	}
	recs := recordtest.Ends(t, o.Record)
	if len(recs) != 1 {
		t.Fatalf("%d records, want 1", len(recs))
	}
	rec := recs[0]
	if rec.Outcome != runner.OutcomeRan || rec.ExitCode != 7 || rec.Nested || rec.Session != "s1" || rec.Project != project ||
		len(rec.Resources) != 1 || rec.Resources[0].Name != "heavy" || rec.Resources[0].Lease == "" || rec.Resources[0].Token == 0 ||
		!rec.End.After(rec.Start) || rec.PID != os.Getpid() {
		t.Fatalf("record %+v", rec)
	}
	if strings.Contains(rec.Command, "secret") || !strings.Contains(rec.Command, "--api-key ***") {
		t.Fatalf("record command %q is not redacted", rec.Command)
	}
	fields := strings.Split(strings.TrimSpace(stdout.String()), "|")
	// The command gets the lease's secret; the record only its id.
	heldLease, secret, _ := strings.Cut(fields[0], ".")
	want := []string{project + "/heavy=" + rec.Resources[0].Lease, project + "/heavy=" + itoa(rec.Resources[0].Token), "s1", rec.ID}
	if got := append([]string{heldLease}, fields[1:]...); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("child saw %q, want %q", fields, want)
	}
	if governor.LeaseIDOf(secret) != rec.Resources[0].Lease {
		t.Fatalf("child saw secret %q, which does not prove lease %s", secret, rec.Resources[0].Lease)
	}
	if data, err := os.ReadFile(o.Record); err != nil || strings.Contains(string(data), secret) {
		t.Fatalf("the record holds the lease's secret (%v): %s", err, data)
	}
	if st := status(t, f, "heavy"); st.Used != 0 || st.Counters.Acquired != 1 || st.Counters.Released != 1 {
		t.Fatalf("after the run: %+v", st)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func TestRunBusySkipAndWaitTimeout(t *testing.T) {
	f := newFixture(t)
	g := f.governor(t, governor.Options{Session: "holder-session"})
	defer g.Close()
	l := leasetest.HoldHeavy(t, g)
	for _, tc := range []struct {
		ifBusy  string
		wait    time.Duration
		code    int
		outcome runner.Outcome
	}{
		{"", 0, runner.ExitBusy, runner.OutcomeBusy},
		{"skip", 0, runner.ExitSkipped, runner.OutcomeSkipped},
		{"", 300 * time.Millisecond, runner.ExitBusy, runner.OutcomeBusy},
	} {
		o, _, stderr := f.options(t, "true")
		o.IfBusy, o.WaitTimeout = tc.ifBusy, tc.wait
		if code := runner.Run(context.Background(), o); code != tc.code {
			t.Fatalf("--if-busy %q --wait-timeout %v: exit %d, want %d; stderr %s", tc.ifBusy, tc.wait, code, tc.code, stderr)
		}
		wants := []string{"held by session holder-session", "since", "last heartbeat", "expires in",
			"governor takeover heavy --lease " + l.ID() + " --project " + project}
		if tc.ifBusy == "skip" { // the expected outcome: one line
			wants = []string{"governor: heavy is busy: 1 of 1 in use, held by session holder-session; skipped (--if-busy skip)\n"}
			if n := strings.Count(stderr.String(), "\n"); n != 1 {
				t.Errorf("--if-busy skip: %d lines on stderr, want 1:\n%s", n, stderr)
			}
		}
		for _, want := range wants {
			if !strings.Contains(stderr.String(), want) {
				t.Errorf("--if-busy %q: stderr %q lacks %q", tc.ifBusy, stderr, want)
			}
		}
		rec := recordtest.Ends(t, o.Record)[0]
		if rec.Outcome != tc.outcome || rec.ExitCode != tc.code || tc.wait > 0 && rec.WaitSeconds < tc.wait.Seconds() {
			t.Errorf("record %+v", rec)
		}
	}
	if st := status(t, f, "heavy"); len(st.Holders) != 1 || len(st.Waiters) != 0 {
		t.Fatalf("refused runs left state behind: %+v", st)
	}
}

// An ancestor's lease named in GOVERNOR_HELD is used, not taken again,
// and not released; a stale entry is ignored and the resource acquired.
func TestRunNestedUsesAncestorsLease(t *testing.T) {
	f := newFixture(t)
	g := f.governor(t, governor.Options{})
	defer g.Close()
	l := leasetest.HoldHeavy(t, g)
	held, tokens := acquire.FormatHeld([]acquire.HeldLease{{Key: l.Key(), LeaseID: l.ID(), Secret: l.Handle().Secret, Token: l.Token()}})
	o, stdout, stderr := f.options(t, "sh", "-c", `echo "$GOVERNOR_HELD"`)
	o.Env = append(o.Env, runner.EnvHeld+"="+held, runner.EnvToken+"="+tokens, runner.EnvRunIDs+"=outer")
	if code := runner.Run(context.Background(), o); code != 0 {
		t.Fatalf("nested run: exit %d; stderr %s", code, stderr)
	}
	if got := strings.TrimSpace(stdout.String()); got != held {
		t.Fatalf("child saw GOVERNOR_HELD=%q, want the ancestor's %q", got, held)
	}
	all := recordtest.All(t, o.Record)
	if len(all) != 2 || all[0].Kind != runner.KindGrant || all[1].Kind != runner.KindEnd {
		t.Fatalf("records %+v, want a grant and an end", all)
	}
	for _, rec := range all {
		if !rec.Nested || rec.WaitSeconds != 0 || !rec.Resources[0].Nested || rec.Resources[0].Lease != l.ID() || rec.OuterRun != "outer" {
			t.Fatalf("record %+v", rec)
		}
	}
	st := status(t, f, "heavy")
	if len(st.Holders) != 1 || st.Holders[0].LeaseID != l.ID() || st.Counters.Acquired != 1 || st.Counters.Released != 0 {
		t.Fatalf("the nested run touched the ancestor's lease: %+v", st)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}

	// Now the entry is stale: the run acquires for itself.
	o, _, stderr = f.options(t, "true")
	o.Env = append(o.Env, runner.EnvHeld+"="+held)
	if code := runner.Run(context.Background(), o); code != 0 {
		t.Fatalf("stale nested run: exit %d; stderr %s", code, stderr)
	}
	if rec := recordtest.Ends(t, o.Record)[0]; rec.Nested || rec.Resources[0].Lease == l.ID() || !strings.Contains(stderr.String(), "no longer held") {
		t.Fatalf("stale entry: record %+v, stderr %s", rec, stderr)
	}
}

// Lease ids are public: an entry of GOVERNOR_HELD without the lease's
// secret, or with another one, does not let a run ride in the holder's
// slot (issue 18 point 1). It acquires as usual, and is refused.
func TestRunNestedNeedsTheSecret(t *testing.T) {
	f := newFixture(t)
	g := f.governor(t, governor.Options{})
	defer g.Close()
	l := leasetest.HoldHeavy(t, g)
	defer l.Release()
	other, _ := governorSecret(t)
	for name, secret := range map[string]string{"no secret": "", "another lease's secret": other} {
		want := "without the secret that proves it"
		if secret != "" {
			want = "with a secret that does not prove it"
		}
		held, tokens := acquire.FormatHeld([]acquire.HeldLease{{Key: l.Key(), LeaseID: l.ID(), Secret: secret, Token: l.Token()}})
		o, stdout, stderr := f.options(t, "echo", "ran")
		o.Env = append(o.Env, runner.EnvHeld+"="+held, runner.EnvToken+"="+tokens)
		if code := runner.Run(context.Background(), o); code != runner.ExitBusy {
			t.Fatalf("%s: exit %d, want %d (busy); stdout %q, stderr %s", name, code, runner.ExitBusy, stdout, stderr)
		}
		if stdout.Len() != 0 || !strings.Contains(stderr.String(), want) {
			t.Fatalf("%s: stdout %q, stderr %s", name, stdout, stderr)
		}
	}
	if st := status(t, f, "heavy"); len(st.Holders) != 1 || st.Counters.Acquired != 1 || st.Counters.Busy != 2 {
		t.Fatalf("after the forged runs: %+v", st)
	}
}

// governorSecret returns a lease secret and its id, of no lease.
func governorSecret(t *testing.T) (secret, id string) {
	t.Helper()
	h, err := governor.ParseHandle("x@" + governor.LeaseIDOf("0123456789abcdef0123456789abcdef") + ".0123456789abcdef0123456789abcdef")
	if err != nil {
		t.Fatal(err)
	}
	return h.Secret, h.ID
}

func TestRunLeaseLostStopsTheTree(t *testing.T) {
	f := newFixture(t)
	f.ttl = time.Second
	o, _, stderr := f.options(t, "sleep", "30")
	o.KillGrace = 200 * time.Millisecond
	go func() {
		// Take the lease away, as a takeover would.
		b, err := filebackend.New(f.dir, filebackend.Options{})
		if err != nil {
			return
		}
		defer b.Close()
		key := governor.Key{Project: project, Resource: "heavy"}
		for range 200 {
			st, err := b.Status(context.Background(), key)
			if err == nil && len(st.Holders) == 1 {
				_, _ = b.Admin(context.Background(), key, governor.Action{Kind: eventkind.Reclaimed, IDs: []string{st.Holders[0].LeaseID}, Token: st.Holders[0].Token})
				return
			}
			pause := time.NewTimer(20 * time.Millisecond)
			<-pause.C
		}
	}()
	start := time.Now()
	code := runner.Run(context.Background(), o)
	if code != runner.ExitLeaseLost || !strings.Contains(stderr.String(), "lease on heavy was lost") {
		t.Fatalf("exit %d, want 122; stderr %s", code, stderr)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("took %v to notice", d)
	}
	if rec := recordtest.Ends(t, o.Record)[0]; rec.Outcome != runner.OutcomeLeaseLost || rec.ExitCode != 122 {
		t.Fatalf("record %+v", rec)
	}
}

func TestRunNotFoundNeverWaits(t *testing.T) {
	f := newFixture(t)
	g := f.governor(t, governor.Options{})
	defer g.Close()
	if _, err := g.Acquire(context.Background(), "heavy", governor.AcquireOptions{Limit: 1}); err != nil {
		t.Fatal(err)
	}
	o, _, stderr := f.options(t, "no-such-command-governor-test")
	o.IfBusy = "wait"
	if code := runner.Run(context.Background(), o); code != runner.ExitNotFound || !strings.Contains(stderr.String(), "command not found") {
		t.Fatalf("exit %d, want 127; stderr %s", code, stderr)
	}
	if rec := recordtest.Ends(t, o.Record)[0]; rec.Outcome != runner.OutcomeError || rec.ExitCode != 127 {
		t.Fatalf("record %+v", rec)
	}
}

func TestRunBadOptionsAreRecorded(t *testing.T) {
	f := newFixture(t)
	o, _, stderr := f.options(t, "true")
	o.IfBusy = "sometimes"
	if code := runner.Run(context.Background(), o); code != runner.ExitFailure || !strings.Contains(stderr.String(), `--if-busy "sometimes" is not allowed`) {
		t.Fatalf("exit %d, want 125; stderr %s", code, stderr)
	}
	if rec := recordtest.Ends(t, o.Record)[0]; rec.Outcome != runner.OutcomeError || rec.ExitCode != 125 {
		t.Fatalf("record %+v", rec)
	}
}

// The watchdog kills the processes carrying its run id when its pipe
// reaches end of file, and nothing when it reads "done".
func TestWatchdog(t *testing.T) {
	for _, tc := range []struct {
		name string
		done bool
	}{{"governor died", false}, {"done", true}} {
		t.Run(tc.name, func(t *testing.T) {
			id := "wdtest" + strconv.FormatInt(time.Now().UnixNano(), 36) + strconv.Itoa(os.Getpid())
			marked := start(t, runner.EnvRunIDs+"=other "+id)
			other := start(t, runner.EnvRunIDs+"=other "+id+"x")
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			var wg sync.WaitGroup
			var code int
			wg.Go(func() { code = runner.Watchdog(id, r, &stderr) })
			if tc.done {
				_, _ = w.WriteString("done\n")
			}
			w.Close()
			wg.Wait()
			r.Close()
			if code != 0 {
				t.Fatalf("watchdog exit %d: %s", code, &stderr)
			}
			if tc.done {
				select {
				case <-marked:
					t.Fatal("the watchdog killed its run's process after done")
				default:
				}
			} else {
				timer := time.NewTimer(5 * time.Second)
				defer timer.Stop()
				select {
				case <-marked:
				case <-timer.C:
					t.Fatalf("the marked process survived; stderr %s", &stderr)
				}
				if !strings.Contains(stderr.String(), "governor exited without releasing; killed ") {
					t.Errorf("stderr %q does not report the kill", &stderr)
				}
			}
			select {
			case <-other:
				t.Fatal("the watchdog killed a process of another run")
			default:
			}
		})
	}
}

// start runs sleep with an extra environment variable and returns a
// channel closed when it has exited.
func start(t *testing.T, kv string) <-chan struct{} {
	c := exec.Command("sleep", "30")
	c.Env = append(os.Environ(), kv)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		_ = c.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		_ = c.Process.Kill()
		<-done
	})
	return done
}

func ExampleFormatHeld() {
	held, tokens := acquire.FormatHeld([]acquire.HeldLease{
		{Key: governor.Key{Project: "prj-0001", Resource: "heavy"}, LeaseID: "5f2a", Token: 41},
		{Key: governor.Key{Project: "prj-0001", Resource: "provider:anthropic"}, LeaseID: "9c1d", Token: 7},
	})
	fmt.Println(runner.EnvHeld + "=" + held)
	fmt.Println(runner.EnvToken + "=" + tokens)
	// Output:
	// GOVERNOR_HELD=prj-0001/heavy=5f2a,prj-0001/provider:anthropic=9c1d
	// GOVERNOR_TOKEN=prj-0001/heavy=41,prj-0001/provider:anthropic=7
}

func TestRunLeavesNoGoroutines(t *testing.T) {
	f := newFixture(t)
	o, _, _ := f.options(t, "true")
	runner.Run(context.Background(), o) // warm up process-wide helpers (signals, the forker)
	before := runtime.NumGoroutine()
	o, _, stderr := f.options(t, "sh", "-c", "echo out; echo err >&2")
	if code := runner.Run(context.Background(), o); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		pause := time.NewTimer(10 * time.Millisecond)
		<-pause.C
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Fatalf("%d goroutines after Run, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}
