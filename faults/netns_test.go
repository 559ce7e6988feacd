package faults_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/proc"
	"github.com/governor-dev/governor/internal/proctest"
	"github.com/governor-dev/governor/internal/redistest"
)

// Scenario 6: several hosts. Each test host is a network namespace
// (`ip netns add`, a veth pair into a bridge in the root namespace, an
// address in a private /24 the test creates) and each governor process
// "on" it runs under `unshare --uts --pid --fork --mount-proc`: its own
// hostname, network, PID namespace and /proc, so its host id (boot id +
// PID namespace) differs from the other hosts'. One redis-server listens
// on the bridge's address.
//
//  1. Three hosts race `governor run --resource heavy --limit 1` several
//     times each, concurrently: the commands' intervals never overlap.
//  2. Host A holds the slot and host B waits. While A heartbeats, B must
//     not take the slot although A's declared pid does not exist (or is
//     another process) in B's PID namespace: the same-host dead-owner
//     proof never applies across hosts. A's link is taken down past the
//     TTL: A's run exits 122 (lease lost) on its own clock; B is granted
//     only after A's lease expired on the server; after the link is up
//     again, `governor slots --json` shows one holder, B.
//
// Needs root; skips with the reason otherwise.
func TestSeveralHostsNetNS(t *testing.T) {
	setupStart := time.Now()
	tn := newTestNet(t, 3)
	ok, err := redistest.Available()
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Skip("redis-server not installed; set GOVERNOR_REQUIRE_REDIS=1 to fail instead")
	}
	// Listening on the bridge's address (for the hosts) and on loopback
	// (for the test's own checks from the root namespace).
	s, err := redistest.StartServer(t.TempDir(), "--bind", netnsGW, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	hostURL := "redis://" + netnsGW + ":" + strconv.Itoa(s.Port) + "/0"
	bin := governorBin(t)
	t.Logf("setup (3 hosts, bridge, redis-server, governor build): %v", time.Since(setupStart).Round(time.Millisecond))

	// Every host reaches the server.
	for _, h := range tn.hosts {
		c := onHost(h, nil, `exec "$@"`, bin, "--config", runConfig(t, uniq("ping"), ""), "--backend", "redis", "--redis-url", hostURL, "slots", "--json")
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("host %s cannot reach redis at %s: %v\n%s", h.Name, hostURL, err, out)
		}
	}

	t.Run("race", func(t *testing.T) { netnsRace(t, tn, bin, hostURL) })
	t.Run("partition", func(t *testing.T) { netnsPartition(t, tn, bin, s, hostURL) })
}

// netnsRace: every host runs `governor run` for one slot rounds times in
// a row, all hosts at once; each command records its interval (wall
// clock, which all namespaces share) and its hostname.
func netnsRace(t *testing.T, tn *testNet, bin, hostURL string) {
	const rounds = 4
	start := time.Now()
	project := uniq("netns-race")
	cfg := runConfig(t, project, "lease:\n  ttl: 2s\n  heartbeat: 600ms\n")
	out := filepath.Join(t.TempDir(), "spans")
	work := `s=$(date +%s%N); sleep 0.2; e=$(date +%s%N); echo "$(hostname) $s $e" >> "$SPANS"`
	loop := `i=0
while [ "$i" -lt "$ROUNDS" ]; do "$@" || exit $?; i=$((i+1)); done`
	var procs []*hostProc
	for _, h := range tn.hosts {
		procs = append(procs, startOnHost(t, h, []string{"SPANS=" + out, "ROUNDS=" + strconv.Itoa(rounds)}, loop,
			bin, "--config", cfg, "--backend", "redis", "--redis-url", hostURL,
			"run", "--resource", "heavy", "--limit", "1", "--if-busy", "wait", "--wait-timeout", "60s",
			"--", "sh", "-c", work))
	}
	for i, p := range procs {
		if err := p.wait(90 * time.Second); err != nil {
			t.Fatalf("host %s: %v\n%s", tn.hosts[i].Name, err, p.stderr.String())
		}
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var spans []span
	per := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var sp span
		if _, err := fmt.Sscanf(l, "%s %d %d", &sp.who, &sp.start, &sp.end); err != nil {
			t.Fatalf("span line %q: %v", l, err)
		}
		sp.weight = 1
		spans = append(spans, sp)
		per[sp.who]++
	}
	for _, h := range tn.hosts {
		if per[h.Name] != rounds {
			t.Fatalf("host %s ran %d commands, want %d (hostname not set?): %v", h.Name, per[h.Name], rounds, per)
		}
	}
	checkSpans(t, spans, 1)
	t.Logf("%d runs from %d hosts, never two at once; took %v", len(spans), len(tn.hosts), time.Since(start).Round(time.Millisecond))
}

func netnsPartition(t *testing.T, tn *testNet, bin string, s *redistest.Server, hostURL string) {
	const ttl = 2 * time.Second
	project := uniq("netns-part")
	cfg := runConfig(t, project, "lease:\n  ttl: 2s\n  heartbeat: 600ms\n")
	key := governor.Key{Project: project, Resource: "heavy"}
	direct := backend(t, client(t, s.Addr))
	hA, hB := tn.hosts[0], tn.hosts[1]
	dir := t.TempDir()
	bStart, bGo := filepath.Join(dir, "b-start"), filepath.Join(dir, "b-go")
	global := []string{bin, "--config", cfg, "--backend", "redis", "--redis-url", hostURL}
	run := []string{"run", "--resource", "heavy", "--limit", "1", "--kill-grace", "1s"}

	a := startOnHost(t, hA, nil, `exec "$@"`, append(append(global, run...), "--", "sleep", "120")...)
	var holderA governor.Holder
	eventually(t, 30*time.Second, "host A holding the slot", func() bool {
		st := status(t, direct, key)
		if len(st.Holders) == 1 {
			holderA = st.Holders[0]
			return true
		}
		return a.exited()
	})
	if a.exited() {
		t.Fatalf("A's run ended before holding: %v\n%s", a.err, a.stderr.String())
	}
	if holderA.Host != hA.Name {
		t.Fatalf("A's lease declares host %q, want %q", holderA.Host, hA.Name)
	}

	bWork := `date +%s%N > "$BSTART.tmp" && mv "$BSTART.tmp" "$BSTART"
n=0; while [ ! -e "$BGO" ] && [ "$n" -lt 600 ]; do sleep 0.1; n=$((n+1)); done`
	b := startOnHost(t, hB, []string{"BSTART=" + bStart, "BGO=" + bGo}, `exec "$@"`,
		append(append(global, run...), "--if-busy", "wait", "--wait-timeout", "60s", "--", "sh", "-c", bWork)...)
	var waiterB governor.Waiter
	eventually(t, 30*time.Second, "host B queued", func() bool {
		st := status(t, direct, key)
		if len(st.Waiters) == 1 {
			waiterB = st.Waiters[0]
			return true
		}
		return b.exited()
	})
	if b.exited() {
		t.Fatalf("B's run ended before queueing: %v\n%s", b.err, b.stderr.String())
	}
	// Three host ids: A's, B's and the test's own, all different.
	self := proc.HostID()
	t.Logf("A: host %s pid %d host id %s; B: host %s pid %d host id %s; test: %s",
		holderA.Host, holderA.PID, holderA.HostID, waiterB.Host, waiterB.PID, waiterB.HostID, self)
	if holderA.HostID == "" || waiterB.HostID == "" || holderA.HostID == waiterB.HostID || holderA.HostID == self || waiterB.HostID == self {
		t.Fatalf("host ids not distinct: A %q B %q test %q", holderA.HostID, waiterB.HostID, self)
	}
	if waiterB.Host != hB.Name {
		t.Fatalf("B declares host %q, want %q", waiterB.Host, hB.Name)
	}

	// While A heartbeats, B waits: A's pid means nothing in B's PID
	// namespace, and B must not treat it as proof that A is dead.
	time.Sleep(2 * ttl)
	if _, err := os.Stat(bStart); err == nil {
		t.Fatal("B was granted while A was alive and reachable: the dead-owner proof was applied across hosts")
	}
	if st := status(t, direct, key); len(st.Holders) != 1 || st.Holders[0].LeaseID != holderA.LeaseID {
		t.Fatalf("before the partition: holders %+v, want A only", st.Holders)
	}
	if a.exited() || b.exited() {
		t.Fatalf("a run ended before the partition: A %v B %v\nA: %s\nB: %s", a.err, b.err, a.stderr.String(), b.stderr.String())
	}

	// Partition A.
	tn.setLink(hA, false)
	down := time.Now()
	linkUp := false
	defer func() {
		if !linkUp {
			tn.setLink(hA, true)
		}
	}()
	var lastExpiresA time.Time // the latest expiry the server ever listed for A
	var bGrant time.Time
	deadline := down.Add(40 * time.Second)
	for !a.exited() || bGrant.IsZero() {
		if time.Now().After(deadline) {
			t.Fatalf("40s into the partition: A exited %v (%v), B granted %v\nA: %s\nB: %s",
				a.exited(), a.err, !bGrant.IsZero(), a.stderr.String(), b.stderr.String())
		}
		st := status(t, direct, key)
		if st.Used > 1 {
			t.Fatalf("weight %d in use during the partition: %+v", st.Used, st.Holders)
		}
		for _, h := range st.Holders {
			if h.LeaseID == holderA.LeaseID && h.Expires.After(lastExpiresA) {
				lastExpiresA = h.Expires
			}
		}
		if bGrant.IsZero() {
			if data, err := os.ReadFile(bStart); err == nil {
				ns, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
				if err != nil {
					t.Fatalf("B's start %q: %v", data, err)
				}
				bGrant = time.Unix(0, ns)
			}
		}
		if b.exited() {
			t.Fatalf("B's run ended: %v\n%s", b.err, b.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// A: exit 122, decided without the server.
	var ee *exec.ExitError
	if !errors.As(a.err, &ee) || ee.ExitCode() != 122 {
		t.Fatalf("A's run: %v, want exit 122\n%s", a.err, a.stderr.String())
	}
	if !strings.Contains(a.stderr.String(), "lost") {
		t.Fatalf("A's stderr does not say the lease was lost:\n%s", a.stderr.String())
	}
	// B: granted only once A's lease had expired on the server (the
	// server's clock is this machine's wall clock; 10ms for rounding).
	if lastExpiresA.IsZero() {
		t.Fatal("never saw A's lease listed during the partition")
	}
	if bGrant.Before(lastExpiresA.Add(-10 * time.Millisecond)) {
		t.Fatalf("B's command started at %v, %v before A's lease expired on the server (%v): reclaimed across hosts",
			bGrant.Format(time.StampMicro), lastExpiresA.Sub(bGrant), lastExpiresA.Format(time.StampMicro))
	}
	t.Logf("partition: A's lease expired on the server %v after the link went down; B granted %v after the link went down (%v after the expiry); A exited 122 %v after the link went down",
		lastExpiresA.Sub(down).Round(time.Millisecond), bGrant.Sub(down).Round(time.Millisecond),
		bGrant.Sub(lastExpiresA).Round(time.Millisecond), a.exitAt.Sub(down).Round(time.Millisecond))

	// Heal: whatever A's kernel still had to send arrives now.
	tn.setLink(hA, true)
	linkUp = true
	time.Sleep(2 * time.Second)
	r := governorCLI(t, nil, "--config", cfg, "--backend", "redis", "--redis-url", s.URL(), "slots", "--json", "heavy")
	if r.code != 0 {
		t.Fatalf("slots --json: %d %s", r.code, r.stderr)
	}
	holders := slotsHolders(t, r.stdout, "heavy")
	if len(holders) != 1 || holders[0].Host != hB.Name {
		t.Fatalf("after healing: holders %+v, want one, on %s\n%s", holders, hB.Name, r.stdout)
	}
	// The server let A's lease go by expiry, never by a proof of death.
	// (A's own report of the loss died with the partition: it exited
	// before the link came back, so Lost may stay 0.)
	if c := status(t, direct, key).Counters; c.ReclaimedDead != 0 || c.ReclaimedExpiry < 1 {
		t.Fatalf("counters after healing: %+v, want A's lease reclaimed by expiry and none as dead", c)
	} else {
		t.Logf("counters after healing: %+v", c)
	}

	// B finishes normally and frees the slot.
	if err := os.WriteFile(bGo, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := b.wait(30 * time.Second); err != nil {
		t.Fatalf("B's run: %v\n%s", err, b.stderr.String())
	}
	eventually(t, 15*time.Second, "the slot freed", func() bool { return len(status(t, direct, key).Holders) == 0 })
}

// slotsHolders returns the holders of resource in `governor slots --json`
// output (one object, or one per line/array: both accepted).
func slotsHolders(t *testing.T, out, resource string) []struct {
	Host string `json:"host"`
	PID  int    `json:"pid"`
} {
	t.Helper()
	var doc struct {
		Resources []struct {
			Resource string `json:"resource"`
			Holders  []struct {
				Host string `json:"host"`
				PID  int    `json:"pid"`
			} `json:"holders"`
		} `json:"resources"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("slots --json: %v\n%s", err, out)
	}
	for _, r := range doc.Resources {
		if r.Resource == resource {
			return r.Holders
		}
	}
	t.Fatalf("slots --json has no resource %s:\n%s", resource, out)
	return nil
}

// hostProc is a process started with onHost, killed (with its whole PID
// namespace) at the test's cleanup if still running.
type hostProc struct {
	cmd    *exec.Cmd
	stderr *proctest.SyncBuffer
	done   chan struct{}
	err    error     // after done
	exitAt time.Time // after done
}

func startOnHost(t *testing.T, h *testHost, env []string, script string, args ...string) *hostProc {
	t.Helper()
	p := &hostProc{cmd: onHost(h, env, script, args...), stderr: &proctest.SyncBuffer{}, done: make(chan struct{})}
	p.cmd.Stdout = p.stderr
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		p.exitAt = time.Now()
		close(p.done)
	}()
	t.Cleanup(func() {
		if !p.exited() {
			// unshare, by its own pid; --kill-child takes the namespace's
			// init, and with it every process of the namespace.
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

func (p *hostProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// wait waits up to d for p to exit and returns its error.
func (p *hostProc) wait(d time.Duration) error {
	select {
	case <-p.done:
		return p.err
	case <-time.After(d):
		return fmt.Errorf("still running after %v", d)
	}
}
