package statuspage

import (
	"net"
	"strings"
	"testing"
)

func TestLoopback(t *testing.T) {
	for _, tc := range []struct {
		addr net.Addr
		want bool
	}{
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9464}, true},
		{&net.TCPAddr{IP: net.IPv4(127, 1, 2, 3), Port: 9464}, true},
		{&net.TCPAddr{IP: net.IPv6loopback, Port: 9464}, true},
		{&net.TCPAddr{IP: net.IPv4zero, Port: 9464}, false},
		{&net.TCPAddr{IP: net.IPv6unspecified, Port: 9464}, false},
		{&net.TCPAddr{IP: net.IPv4(192, 168, 1, 10), Port: 9464}, false},
		{&net.TCPAddr{IP: net.ParseIP("fe80::1"), Port: 9464}, false},
		{&net.UnixAddr{Name: "/tmp/s", Net: "unix"}, false},
	} {
		if got := loopback(tc.addr); got != tc.want {
			t.Errorf("loopback(%v) = %v, want %v", tc.addr, got, tc.want)
		}
	}
}

// serve warns when it listens where other machines can connect, more so
// with actions: the token would cross the network in plain HTTP; on
// loopback, when other users of this machine can connect; never on a
// unix socket.
func TestServeExposureWarnings(t *testing.T) {
	lan := &net.TCPAddr{IP: net.IPv4(192, 168, 1, 10), Port: 9464}
	lo := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9464}
	sock := &net.UnixAddr{Name: "/run/g.sock", Net: "unix"}
	alone := func() []string { return nil }
	shared := func() []string { return []string{"bob", "carol"} }
	for _, tc := range []struct {
		addr          net.Addr
		others        func() []string
		page, actions bool
		want          []string // one string per warning, each in it
	}{
		{lo, alone, true, true, nil},
		{lo, alone, false, false, nil},
		{lo, shared, true, false, []string{"other users (bob, carol): every local user can connect"}},
		{lo, shared, false, false, []string{"serve --unix PATH listens on a socket only you can open"}},
		{lo, shared, true, true, []string{"with the token can act"}},
		{sock, shared, true, true, nil},
		{lan, alone, false, false, []string{"reaches beyond loopback"}},
		{lan, alone, true, false, []string{"sessions, hosts, pids and commands"}},
		{lan, alone, true, true, []string{"sessions, hosts, pids and commands", "no TLS: the admin token"}},
	} {
		o := Options{Listen: "HOST:9464", Page: tc.page}
		if tc.actions {
			o.Token = "t"
		}
		ws := exposureWarnings(o, tc.addr, tc.others)
		if len(ws) != len(tc.want) {
			t.Errorf("%v page %v actions %v: %q; want %d warnings", tc.addr, tc.page, tc.actions, ws, len(tc.want))
			continue
		}
		for i, w := range tc.want {
			if !strings.Contains(ws[i], w) {
				t.Errorf("%v page %v actions %v: warning %q lacks %q", tc.addr, tc.page, tc.actions, ws[i], w)
			}
		}
		if !tc.page && len(ws) > 0 && strings.Contains(ws[0], "sessions") {
			t.Errorf("--page=false warns of sessions shown: %q", ws[0])
		}
	}
}
