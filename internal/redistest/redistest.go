// Package redistest starts private redis-server processes for tests.
//
// Each server listens on a free 127.0.0.1 port with no persistence and is
// stopped (by its pid) when the test or TestMain ends. When redis-server
// is missing, tests skip — unless GOVERNOR_REQUIRE_REDIS=1 (set by CI),
// when they fail.
package redistest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server is a running redis-server.
type Server struct {
	Addr string
	Port int
	Dir  string
	// Password is the server's requirepass ("" for none).
	Password string
	cmd      *exec.Cmd
	spawn    func(*exec.Cmd) error
	args     []string
	ready    string // the line that says the server is ready
}

// Available reports whether redis-server can be started; when it cannot
// and GOVERNOR_REQUIRE_REDIS=1 it returns an error saying so.
func Available() (bool, error) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("GOVERNOR_REQUIRE_REDIS") == "1" {
			return false, fmt.Errorf("redis-server not found in PATH but GOVERNOR_REQUIRE_REDIS=1: install it (apt-get install -y redis-server)")
		}
		return false, nil
	}
	return true, nil
}

// Start starts a server for t and stops it at t's cleanup. It skips t when
// redis-server is missing (fails it under GOVERNOR_REQUIRE_REDIS=1).
func Start(t testing.TB, extra ...string) *Server {
	t.Helper()
	ok, err := Available()
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Skip("redis-server not installed; set GOVERNOR_REQUIRE_REDIS=1 to fail instead")
	}
	s, err := StartServer(t.TempDir(), extra...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// StartServer starts a server with its files in dir. The caller stops it.
func StartServer(dir string, extra ...string) (*Server, error) {
	return Options{}.StartServer(dir, extra...)
}

// Options are a server's settings beyond StartServer's.
type Options struct {
	// Password is the server's requirepass. It goes to the server in a
	// config file of mode 0600 in its directory, not on its command
	// line (which any user's ps shows), and into URL.
	Password string
	// Spawn starts the server's process (nil: the command's Start); a
	// caller that gives its children a parent-death signal starts them
	// from one thread.
	Spawn func(*exec.Cmd) error
}

// StartServer starts a server with o's settings and its files in dir.
// The caller stops it. A port that another process took between
// FreePort and the server's bind (an outgoing connection's ephemeral
// port, from the same range) is given up for a new one.
func (o Options) StartServer(dir string, extra ...string) (*Server, error) {
	var conf []string
	protected := "no"
	if o.Password != "" {
		// A config file must be the first argument.
		conf = []string{filepath.Join(dir, "redis-auth.conf")}
		if err := os.WriteFile(conf[0], []byte("requirepass "+o.Password+"\n"), 0o600); err != nil {
			return nil, err
		}
		protected = "yes"
	}
	return onFreePort(func(port int) (*Server, error) {
		s := &Server{Port: port, Addr: "127.0.0.1:" + strconv.Itoa(port), Dir: dir, ready: "Ready to accept connections",
			Password: o.Password, spawn: o.Spawn}
		s.args = append(append(conf, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			"--dir", dir, "--protected-mode", protected), extra...)
		return s, s.start()
	})
}

// portTries bounds the ports a server start tries, and the restarts on
// a port that something else holds for the moment.
const portTries = 20

// onFreePort starts a server with start on a port from FreePort, and on
// another while the one given was taken before the server bound it.
func onFreePort(start func(port int) (*Server, error)) (*Server, error) {
	var err error
	for range portTries {
		port, perr := FreePort()
		if perr != nil {
			return nil, perr
		}
		var s *Server
		if s, err = start(port); !errors.Is(err, errPortTaken) {
			return s, err
		}
	}
	return nil, err
}

// errPortTaken: the server could not bind its port.
var errPortTaken = errors.New("port taken")

func (s *Server) start() error {
	s.cmd = exec.Command("redis-server", s.args...)
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		return err
	}
	spawn := s.spawn
	if spawn == nil {
		spawn = (*exec.Cmd).Start
	}
	if err := spawn(s.cmd); err != nil {
		return err
	}
	ready, ended := make(chan struct{}), make(chan struct{})
	var said []string // the lines before ready, for an error
	go func() {
		defer close(ended)
		sc := bufio.NewScanner(out)
		signalled := false
		for sc.Scan() {
			if signalled {
				continue
			}
			if strings.Contains(sc.Text(), s.ready) {
				close(ready)
				signalled = true
				continue
			}
			said = append(said, sc.Text())
		}
	}()
	select {
	case <-ready:
		return nil
	case <-ended:
		// The server ended before it was ready: its output says why.
		s.Stop()
		tail := said[max(0, len(said)-3):]
		err := fmt.Errorf("redis-server on port %d ended before it was ready: %s", s.Port, strings.Join(tail, " | "))
		if strings.Contains(strings.Join(said, "\n"), "Address already in use") {
			return fmt.Errorf("%w: %w", errPortTaken, err)
		}
		return err
	case <-time.After(20 * time.Second):
		s.Stop()
		return fmt.Errorf("redis-server on port %d did not become ready in 20s", s.Port)
	}
}

// StartReplica starts, for t, a server replicating master and waits until
// the link is up.
func StartReplica(t testing.TB, master *Server) *Server {
	t.Helper()
	r := Start(t, "--replicaof", "127.0.0.1", strconv.Itoa(master.Port))
	rc := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer rc.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		info, _ := rc.Info(context.Background(), "replication").Result()
		if strings.Contains(info, "master_link_status:up") {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica on port %d: no link to its master after 30s", r.Port)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// StartSentinel starts, for t, a Sentinel on a free port that monitors
// master under the name "main" (quorum 1), and stops it at t's cleanup.
func StartSentinel(t testing.TB, master *Server) *Server {
	t.Helper()
	dir := t.TempDir()
	conf := dir + "/sentinel.conf"
	s, err := onFreePort(func(port int) (*Server, error) {
		// Quick to act, for tests: the master is down after 500 ms
		// without an answer, and a failover may be retried after 2 s.
		text := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nsentinel monitor main 127.0.0.1 %d 1\n"+
			"sentinel down-after-milliseconds main 500\nsentinel failover-timeout main 2000\n", port, dir, master.Port)
		if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
			return nil, err
		}
		s := &Server{Port: port, Addr: "127.0.0.1:" + strconv.Itoa(port), Dir: dir,
			args: []string{conf, "--sentinel"}, ready: "+monitor master main"}
		return s, s.start()
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// Restart stops the server and starts it again on the same port with no
// data, as a crash of a server without persistence would.
func (s *Server) Restart() error {
	s.Stop()
	err := s.start()
	for try := 1; try < portTries && errors.Is(err, errPortTaken); try++ {
		// Another process holds the port for the moment (an outgoing
		// connection's ephemeral port): the server's URL must not change.
		time.Sleep(100 * time.Millisecond)
		err = s.start()
	}
	return err
}

// Stop kills the server (by its own pid) and waits for it.
func (s *Server) Stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// Signal sends sig to the server's process: SIGSTOP makes a server that
// takes connections and answers nothing, until SIGCONT.
func (s *Server) Signal(sig os.Signal) error {
	if s.cmd == nil || s.cmd.Process == nil {
		return fmt.Errorf("redistest: the server on %s is not running", s.Addr)
	}
	return s.cmd.Process.Signal(sig)
}

// URL is the server's redis:// URL, with its password if it has one.
func (s *Server) URL() string {
	if s.Password != "" {
		return "redis://:" + url.QueryEscape(s.Password) + "@" + s.Addr + "/0"
	}
	return "redis://" + s.Addr + "/0"
}

// handedOut is every port FreePort returned in this process.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// FreePort asks the kernel for a free loopback port that it never
// returned before in this process. A server on a port an earlier one
// used has the earlier one's URL: to a governor that witnessed the
// earlier server's state (redisbackend.Witness, kept per URL), the new
// server's empty state is that data lost, and its resources are
// quarantined. A test that means a loss restarts its server instead.
func FreePort() (int, error) {
	handedOut.Lock()
	defer handedOut.Unlock()
	for range 1000 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if !handedOut.ports[port] {
			handedOut.ports[port] = true
			return port, nil
		}
	}
	return 0, fmt.Errorf("the kernel gave no loopback port in 1000 tries that this process had not used before (%d used)", len(handedOut.ports))
}

// Patient is how long a test's client waits for each reply (go-redis's
// ReadTimeout and WriteTimeout, 3 s by default). The default ran out
// with three go test -race of the Redis backend at once on a 2-core
// machine, while a miniredis in the test's own process compiled the
// scripts that redisbackend.New loads ("load scripts: i/o timeout"),
// and failed tests that check no time at all.
const Patient = time.Minute

// Client is a client of the server at addr that waits Patient for each
// reply.
func Client(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, ReadTimeout: Patient, WriteTimeout: Patient})
}
