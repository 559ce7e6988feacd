package redistest

import (
	"errors"
	"net"
	"strconv"
	"testing"
	"time"
)

// onTakenPort is a server whose port another listener holds until
// release.
func onTakenPort(t *testing.T) (s *Server, release func()) {
	t.Helper()
	if ok, err := Available(); !ok || err != nil {
		t.Skip("redis-server not installed")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	port := l.Addr().(*net.TCPAddr).Port
	s = &Server{Port: port, Addr: l.Addr().String(), Dir: t.TempDir(), ready: "Ready to accept connections",
		args: []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"}}
	t.Cleanup(s.Stop)
	return s, func() { _ = l.Close() }
}

// A server whose port was taken between FreePort and its bind ends at
// once: its start says so (and StartServer takes another port) instead
// of waiting 20 s for a line that never comes (stop 48's CI failure of
// TestKilledHolderReclaimedAfterTTL, "did not become ready").
func TestStartOnTakenPortSaysSo(t *testing.T) {
	s, _ := onTakenPort(t)
	err := s.start()
	if !errors.Is(err, errPortTaken) {
		t.Fatalf("start on a taken port: %v, want errPortTaken", err)
	}
}

// Restart keeps the server's port (its URL is its identity to a
// witness): while another process holds it for a moment, it tries again.
func TestRestartWaitsForItsPort(t *testing.T) {
	s, release := onTakenPort(t)
	time.AfterFunc(300*time.Millisecond, release)
	if err := s.Restart(); err != nil {
		t.Fatalf("restart after the port was freed: %v", err)
	}
	if c, err := net.Dial("tcp", s.Addr); err != nil {
		t.Fatalf("the restarted server does not listen on %s: %v", s.Addr, err)
	} else {
		_ = c.Close()
	}
}
