package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/governor-dev/governor/internal/exitcode"
	"github.com/governor-dev/governor/internal/redistest"
	"github.com/governor-dev/governor/internal/usertest"
	"github.com/governor-dev/governor/internal/view"
)

// intruder runs the governor binary as a second Unix user against the
// first user's Redis: the shared backend two users of one machine (or of
// many) coordinate on.
type intruder struct {
	user   *usertest.User
	bin    string
	global []string
}

// sharedGovernorBin copies the governor binary into shared, where other
// users can run it (the test's own temporary dirs are root's, mode 0700).
func sharedGovernorBin(t *testing.T, shared string) string {
	t.Helper()
	bin := filepath.Join(shared, "governor")
	data, err := os.ReadFile(governorBin(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

func newIntruder(t *testing.T, redisURL string) *intruder {
	return newIntruderWith(t, redisURL, "")
}

// newIntruderWith is newIntruder with extra configuration (budgets).
func newIntruderWith(t *testing.T, redisURL, extra string) *intruder {
	t.Helper()
	u := usertest.New(t)
	shared := usertest.SharedDir(t)
	bin := sharedGovernorBin(t, shared)
	cfg := filepath.Join(shared, "exec-defaults.yaml")
	if err := os.WriteFile(cfg, []byte("project: "+runProject+"\nresources:\n  heavy: {limit: 1}\n"+extra), 0o644); err != nil {
		t.Fatal(err)
	}
	return &intruder{user: u, bin: bin, global: []string{"--config", cfg, "--backend", "redis", "--redis-url", redisURL}}
}

// run runs governor as the intruder with extra environment.
func (in *intruder) run(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	c := in.user.Command(in.bin, append(append([]string{}, in.global...), args...)...)
	c.Env = append(append(cleanEnv(), "HOME=/nonexistent", "XDG_CONFIG_HOME=", "GOVERNOR_SESSION=intruder"), env...)
	c.Dir = "/"
	return execCode(t, c)
}

// Issue 18, points 1 and 2: a second Unix user who reads the lease id of
// the first user's run in 'governor slots' can neither ride in its slot
// by setting GOVERNOR_HELD, nor renew, release or draw fenced numbers with
// it. Releasing it anyway is a takeover: refused while the owner lives,
// and with --force recorded under the intruder's session.
func TestSecondUserCannotForgeALease(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	in := newIntruder(t, s.URL())
	tg := &target{bin: governorBin(t), name: "redis", redisURL: s.URL(), config: writeRunConfig(t, "")}

	// The first user's run holds heavy (limit 1) while its command waits
	// for its stdin to close.
	holder := tg.command("run", "--resource", "heavy", "--", "sh", "-c", `echo "$GOVERNOR_HELD"; cat >/dev/null`)
	stdin, err := holder.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var holderErr bytes.Buffer
	holder.Stderr = &holderErr
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		_ = holder.Wait()
	}()
	line := make([]byte, 512)
	n, err := stdout.Read(line)
	if err != nil {
		t.Fatalf("the holder's command printed nothing: %v; stderr %s", err, holderErr.String())
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	secret := strings.TrimSpace(string(line[:n]))
	_, secret, _ = strings.Cut(secret, ".")

	// What the intruder sees: the public lease id.
	code, out, errs := in.run(t, nil, "--json", "slots", "heavy")
	var sj view.Slots
	if code != 0 || json.Unmarshal([]byte(out), &sj) != nil || len(sj.Resources) != 1 || len(sj.Resources[0].Holders) != 1 {
		t.Fatalf("slots as %s: exit %d, %s %s", in.user.Name, code, out, errs)
	}
	id := sj.Resources[0].Holders[0].LeaseID
	if secret == "" || strings.Contains(out, secret) {
		t.Fatalf("slots shows the lease's secret %q (or the holder has none): %s", secret, out)
	}

	// 1. Riding in the run's slot by naming its lease.
	forged := "GOVERNOR_HELD=" + runProject + "/heavy=" + id
	code, out, errs = in.run(t, []string{forged}, "run", "--resource", "heavy", "--", "echo", "rode in the slot")
	if code != exitcode.Busy || strings.Contains(out, "rode") || !strings.Contains(errs, "without the secret that proves it") {
		t.Fatalf("run with %s: exit %d, stdout %q, stderr %s; want %d, refused as busy", forged, code, out, errs, exitcode.Busy)
	}
	// 2. Renewing, drawing fenced numbers, releasing by the public id.
	handle := "heavy@" + id
	if code, _, errs := in.run(t, nil, "renew", handle); code != exitcode.Failure || !strings.Contains(errs, "not the lease's owner") {
		t.Fatalf("renew %s: exit %d, %s; want %d, not the owner", handle, code, errs, exitcode.Failure)
	}
	if code, _, errs := in.run(t, nil, "seq", "next", "v", "--lease", handle); code != exitcode.Failure || !strings.Contains(errs, "not the lease's owner") {
		t.Fatalf("seq next --lease %s: exit %d, %s; want %d, not the owner", handle, code, errs, exitcode.Failure)
	}
	if code, _, errs := in.run(t, nil, "release", handle); code != exitcode.Busy || !strings.Contains(errs, "is alive") || !strings.Contains(errs, "--force") {
		t.Fatalf("release %s: exit %d, %s; want %d, the owner is alive", handle, code, errs, exitcode.Busy)
	}
	g := tg.governor(t)
	st := tg.status(t, g, "heavy")
	if len(st.Holders) != 1 || st.Holders[0].LeaseID != id || st.Counters.Released != 0 || st.Counters.Takeovers != 0 || st.Counters.Acquired != 1 {
		t.Fatalf("the intruder changed the holder's lease: %+v", st)
	}

	// 3. Forced, it is a takeover recorded under the intruder's session,
	// and the holder's run learns that it lost the lease.
	if code, _, errs := in.run(t, nil, "release", handle, "--force"); code != 0 {
		t.Fatalf("release %s --force: exit %d, %s", handle, code, errs)
	}
	evs, err := g.Events(t.Context(), "heavy", time.Time{})
	if err != nil || len(evs) == 0 || evs[len(evs)-1].Kind != "takeover" || evs[len(evs)-1].LeaseID != id ||
		!strings.Contains(evs[len(evs)-1].Detail, "session intruder") {
		t.Fatalf("events after the forced release: %+v, %v; want a takeover of %s by session intruder", evs, err, id)
	}
	stdin.Close()
	err = holder.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitcode.LeaseLost {
		t.Fatalf("the holder's run: %v, stderr %s; want exit %d", err, holderErr.String(), exitcode.LeaseLost)
	}
}
