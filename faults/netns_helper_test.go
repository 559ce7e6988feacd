package faults_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// netnsSubnet is the private /24 the test hosts live in. The test only
// ever uses addresses on interfaces it creates itself: the bridge gets
// .1 (where redis-server listens), host i gets .(10+i).
const (
	netnsPrefix = "10.231.7."
	netnsSubnet = netnsPrefix + "0/24"
	netnsGW     = netnsPrefix + "1"
)

// testNet is a bridge in the root namespace with one network namespace
// per test host, each joined to it by a veth pair.
type testNet struct {
	t      *testing.T
	bridge string
	hosts  []*testHost
}

// testHost is one network namespace: Name is its hostname too.
type testHost struct {
	Name string // hostname inside the host (h1, h2...)
	NS   string // network namespace name
	Root string // root-side end of its veth pair (enslaved to the bridge)
	Addr string // its address in netnsSubnet
}

// ipCmd runs ip with args, returning its combined output.
func ipCmd(args ...string) (string, error) {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return string(out), nil
}

// newTestNet creates n hosts, skipping t when not root, when ip or
// unshare is missing, when network namespaces cannot be created, or when
// netnsSubnet is already in use on this machine (by anything, including
// a leftover of a killed run). Everything it creates is removed at t's
// cleanup.
func newTestNet(t *testing.T, n int) *testNet {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("scenario 6 needs root (ip netns add, veth, unshare --pid): run the suite as root")
	}
	for _, tool := range []string{"ip", "unshare", "hostname", "date"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("scenario 6 needs %s in PATH: %v", tool, err)
		}
	}
	if out, err := ipCmd("-4", "addr", "show", "to", netnsSubnet); err != nil || strings.TrimSpace(out) != "" {
		t.Skipf("%s is already in use on this machine (or ip failed: %v); not touching it:\n%s", netnsSubnet, err, out)
	}
	// Names unique to this test process: never another run's interfaces.
	id := strconv.Itoa(os.Getpid() % 100000)
	tn := &testNet{t: t, bridge: "gvb" + id}
	probe := "gov-" + id + "-probe"
	if _, err := ipCmd("netns", "add", probe); err != nil {
		t.Skipf("ip netns add fails here (no CAP_SYS_ADMIN or no netns support?): %v", err)
	}
	_, _ = ipCmd("netns", "del", probe)
	// Cleanup runs after the cleanups of the processes and the
	// redis-server registered later (cleanups run last in, first out).
	t.Cleanup(tn.destroy)

	must := func(args ...string) {
		t.Helper()
		if _, err := ipCmd(args...); err != nil {
			t.Fatal(err)
		}
	}
	must("link", "add", tn.bridge, "type", "bridge")
	must("addr", "add", netnsGW+"/24", "dev", tn.bridge)
	must("link", "set", tn.bridge, "up")
	for i := 1; i <= n; i++ {
		h := &testHost{
			Name: "h" + strconv.Itoa(i),
			NS:   "gov-" + id + "-h" + strconv.Itoa(i),
			Root: "gvr" + id + "-" + strconv.Itoa(i),
			Addr: netnsPrefix + strconv.Itoa(10+i),
		}
		tn.hosts = append(tn.hosts, h)
		must("netns", "add", h.NS)
		must("link", "add", h.Root, "type", "veth", "peer", "name", "eth0", "netns", h.NS)
		must("link", "set", h.Root, "master", tn.bridge)
		must("link", "set", h.Root, "up")
		must("-n", h.NS, "addr", "add", h.Addr+"/24", "dev", "eth0")
		must("-n", h.NS, "link", "set", "lo", "up")
		must("-n", h.NS, "link", "set", "eth0", "up")
	}
	return tn
}

// destroy removes the namespaces, veths and bridge of tn (those that
// exist: it runs after a partial setup too).
func (tn *testNet) destroy() {
	for _, h := range tn.hosts {
		if _, err := ipCmd("netns", "del", h.NS); err != nil {
			tn.t.Logf("cleanup: %v", err)
		}
		// Deleting the namespace deletes its end of the pair and so the
		// pair; this is for a namespace that could not be deleted.
		_, _ = ipCmd("link", "del", h.Root)
	}
	if _, err := ipCmd("link", "del", tn.bridge); err != nil {
		tn.t.Logf("cleanup: %v", err)
	}
}

// setLink brings host h's root-side link up or down: down, nothing
// passes between h and the rest (h's packets are dropped silently).
func (tn *testNet) setLink(h *testHost, up bool) {
	tn.t.Helper()
	state := "down"
	if up {
		state = "up"
	}
	if _, err := ipCmd("link", "set", h.Root, state); err != nil {
		tn.t.Fatal(err)
	}
}

// onHost returns a command that runs `sh -c script` "on" host h: in h's
// network namespace, with its own UTS namespace (hostname h.Name), PID
// namespace and /proc, so that governor's host id differs from every
// other host's. The script runs after `hostname`; args are its $1....
// Killing the returned process (unshare, --kill-child) kills the
// namespace's init and so every process in it.
func onHost(h *testHost, env []string, script string, args ...string) *exec.Cmd {
	full := `hostname "$GOV_TEST_HOST" || exit 1` + "\n" + script
	cmdArgs := append([]string{"netns", "exec", h.NS,
		"unshare", "--uts", "--pid", "--fork", "--mount-proc", "--kill-child",
		"sh", "-c", full, "sh"}, args...)
	c := exec.Command("ip", cmdArgs...)
	c.Env = cleanEnv(append([]string{"GOV_TEST_HOST=" + h.Name}, env...)...)
	return c
}
