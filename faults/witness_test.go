package faults_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/redistest"
	"github.com/governor-dev/governor/internal/view"
)

// Redis lost its data (restarted without persistence, or FLUSHALL) while
// a `governor run` held the resource, stopped (SIGSTOP) so that it cannot
// renew: the first to reach the wiped server is a new process of the
// same machine (the same state dir: its witness), which never saw the
// resource itself — a shell's `governor acquire`, or a new client's
// bridge. It is refused, in a quarantine, not granted beside the holder.
func TestRedisLossNewProcess(t *testing.T) {
	s := redistest.Start(t)
	for _, loss := range []string{"restart", "flushall"} {
		for _, first := range []string{"cli", "bridge"} {
			t.Run(loss+"/"+first, func(t *testing.T) {
				m := newMachine(t, s, uniq("witness"), "")
				// The command starts once the grant has returned (and the
				// machine's witness was written).
				started := filepath.Join(t.TempDir(), "started")
				holder := m.start(t, "run", "--resource", "heavy", "--limit", "1", "--", "sh", "-c", "touch "+started+"; exec sleep 120")
				key := governor.Key{Project: m.project, Resource: "heavy"}
				eventually(t, 20*time.Second, "the run's command started", func() bool { _, err := os.Stat(started); return err == nil })
				if err := holder.Process.Signal(syscall.SIGSTOP); err != nil {
					t.Fatal(err)
				}
				m.lose(t, loss)
				switch first {
				case "cli":
					out, err := m.gov("acquire", "heavy", "--limit", "1").CombinedOutput()
					if err == nil {
						t.Fatalf("a new `governor acquire` after the loss was granted beside the stopped holder: %s", out)
					}
					t.Logf("the new acquire: %v: %s", err, out)
				case "bridge":
					reply := m.bridgeAcquire(t, "heavy")
					if reply.OK {
						t.Fatalf("a new client's acquire after the loss was granted beside the stopped holder: %+v", reply)
					}
					t.Logf("the new client's acquire: %s", reply.Error)
				}
				if st := status(t, m.direct, key); !st.Quarantine.After(st.Now) || len(st.Holders) != 0 {
					t.Fatalf("after the new process: %d holders, quarantine until %v (now %v); want none and a quarantine", len(st.Holders), st.Quarantine, st.Now)
				}
			})
		}
	}
}

// Redis lost its data while a 3 USD budget had 1 spent and 1 reserved by
// a running `governor run --cost 1`: the new `governor run --cost 1`
// that arrive first, which never saw the budget themselves, are refused
// (the budget held), not admitted on a fresh budget; `governor budgets`
// says it is held.
func TestRedisLossNewRunsHoldBudget(t *testing.T) {
	s := redistest.Start(t)
	for _, loss := range []string{"restart", "flushall"} {
		t.Run(loss, func(t *testing.T) {
			m := newMachine(t, s, uniq("witnessbudget"), "budgets:\n  day: {limit: 3, unit: USD, calendar: day, tz: "+dayZone()+", providers: [fake]}\n")
			cost := []string{"run", "--provider", "fake", "--cost", "1", "--"}
			if out, err := m.gov(append(cost, "true")...).CombinedOutput(); err != nil {
				t.Fatalf("the first run: %v: %s", err, out)
			}
			m.start(t, append(cost, "sleep", "120")...)
			eventually(t, 2*time.Minute, "the second run's reservation", func() bool { return m.reserved(t, "day") == 1_000_000 })
			m.lose(t, loss)
			// The provider's slot is quarantined first (its TTL): no run is
			// admitted meanwhile, and after it the budget refuses them. The
			// first run finds the loss (the machine's witness); each next
			// one starts once the slot's quarantine is over, read from the
			// backend, rather than runs started throughout it (each a
			// process: seconds apiece on a loaded machine).
			slot := governor.Key{Project: m.project, Resource: "provider:fake"}
			refused := func(i int) string {
				out, err := m.gov(append(cost, "true")...).CombinedOutput()
				if err == nil {
					t.Fatalf("new run %d after the loss was admitted: %s", i, out)
				}
				return string(out)
			}
			n, got := 1, refused(1)
			for ; !strings.Contains(got, "held"); got = refused(n) {
				if n++; n > 5 {
					t.Fatalf("new run %d after the loss, the slot's quarantine over: %s; want refused as held", n-1, got)
				}
				eventually(t, 2*time.Minute, "the slot's quarantine over", func() bool {
					st := status(t, m.direct, slot)
					return !st.Quarantine.After(st.Now)
				})
			}
			if out := refused(n + 1); !strings.Contains(out, "held") {
				t.Fatalf("new run %d after the loss: %s; want refused as held", n+1, out)
			}
			out, err := m.gov("budgets").CombinedOutput()
			if err != nil || !strings.Contains(strings.ToLower(string(out)), "held") {
				t.Fatalf("governor budgets after the loss: %v: %s; want day held", err, out)
			}
		})
	}
}

// dayZone is a time zone whose calendar day does not end within the
// next 6 hours: UTC, or UTC+12 (Etc/GMT-12, the sign inverted as POSIX
// writes it) from 18:00 UTC on. A day that rolled during a test would end
// the wiped day's hold, and with it what the test checks.
func dayZone() string {
	if time.Now().UTC().Hour() < 18 {
		return "UTC"
	}
	return "Etc/GMT-12"
}

// machine is the processes of one machine on a Redis server: one config,
// one state dir (their witness of the server).
type machine struct {
	s       *redistest.Server
	bin     string
	project string
	args    []string // the global flags
	direct  governor.Backend
}

func newMachine(t *testing.T, s *redistest.Server, project, extra string) *machine {
	cfg := runConfig(t, project, "lease:\n  ttl: 3s\n  heartbeat: 500ms\nproviders:\n  fake: {max_concurrency: 10}\n"+extra)
	return &machine{s: s, bin: governorBin(t), project: project, direct: backend(t, client(t, s.Addr)),
		args: []string{"--config", cfg, "--backend", "redis", "--redis-url", s.URL(), "--dir", t.TempDir()}}
}

// gov is a governor command of the machine.
func (m *machine) gov(args ...string) *exec.Cmd {
	c := exec.Command(m.bin, append(append([]string(nil), m.args...), args...)...)
	c.Env = cleanEnv()
	return c
}

// start starts a governor command of the machine, killed at cleanup.
func (m *machine) start(t *testing.T, args ...string) *exec.Cmd {
	c := m.gov(args...)
	startKilledAtCleanup(t, c)
	return c
}

// reserved is what budget name has reserved now (micro-units), as
// `governor budgets --json` reads it.
func (m *machine) reserved(t *testing.T, name string) int64 {
	t.Helper()
	out, err := m.gov("budgets", "--json").Output()
	if err != nil {
		t.Fatalf("governor budgets --json: %v: %s", err, out)
	}
	var v view.Budgets
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("governor budgets --json: %v: %s", err, out)
	}
	for _, b := range v.Budgets {
		if b.Name == name {
			return b.Reserved
		}
	}
	return 0
}

// lose makes the server lose its data: "restart" without persistence,
// or "flushall".
func (m *machine) lose(t *testing.T, how string) {
	t.Helper()
	if how == "restart" {
		if err := m.s.Restart(); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err := client(t, m.s.Addr).FlushAll(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
}

// bridgeReply is a reply of `governor bridge`.
type bridgeReply struct {
	ID    int             `json:"id"`
	OK    bool            `json:"ok"`
	Error json.RawMessage `json:"error"`
}

// bridgeAcquire starts a new client's bridge of the machine and asks it
// for resource (fail mode), returning its reply.
func (m *machine) bridgeAcquire(t *testing.T, resource string) bridgeReply {
	t.Helper()
	c := m.gov("bridge")
	in, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.Stderr = os.Stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = in.Close()
		_ = c.Wait()
	}()
	fmt.Fprintf(in, `{"id":1,"op":"hello","args":{"protocol":1,"client":"faults","pid":%d}}`+"\n", os.Getpid())
	fmt.Fprintf(in, `{"id":2,"op":"acquire","args":{"resources":[%q],"limit":1}}`+"\n", resource)
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		var r bridgeReply
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("bridge: %q: %v", sc.Text(), err)
		}
		if r.ID == 1 && !r.OK {
			t.Fatalf("bridge hello: %s", r.Error)
		}
		if r.ID == 2 {
			return r
		}
	}
	t.Fatalf("the bridge ended before its reply: %v", sc.Err())
	return bridgeReply{}
}
