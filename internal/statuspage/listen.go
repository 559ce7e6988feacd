package statuspage

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// listen listens where o says: a unix socket at o.Unix, else TCP at
// o.Listen. where names the URL of a path on it, to print.
func listen(o Options) (ln net.Listener, where func(path string) string, err error) {
	if o.Unix != "" {
		ln, err := listenUnix(o.Unix)
		if err != nil {
			return nil, nil, fmt.Errorf("--unix %s: %w", o.Unix, err)
		}
		return ln, func(path string) string {
			return "unix socket " + o.Unix + " (curl --unix-socket " + o.Unix + " http://localhost" + path + ")"
		}, nil
	}
	ln, err = net.Listen("tcp", o.Listen)
	if err != nil {
		return nil, nil, fmt.Errorf("--listen %s: %w", o.Listen, err)
	}
	return ln, func(path string) string { return "http://" + ln.Addr().String() + path }, nil
}

// listenUnix listens on a unix socket at path that only this user can
// connect to (0600 from the start: it is made in a private directory,
// chmodded, then renamed into place). An existing path is refused unless
// it is a socket of this user that nothing listens on (a serve that was
// killed left it): that one is replaced. Closing the listener removes the
// socket if it is still the one made here.
func listenUnix(path string) (net.Listener, error) {
	if err := clearStale(path); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(path), ".gsv")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	at := filepath.Join(tmp, "s")
	ln, err := net.Listen("unix", at)
	if err != nil {
		return nil, err
	}
	ul := ln.(*net.UnixListener)
	ul.SetUnlinkOnClose(false) // it is renamed away: removeOwn removes it
	if err := os.Chmod(at, 0o600); err != nil {
		ul.Close()
		return nil, err
	}
	if err := os.Rename(at, path); err != nil {
		ul.Close()
		return nil, err
	}
	fi, err := os.Lstat(path)
	if err != nil {
		ul.Close()
		return nil, err
	}
	return &unixListener{UnixListener: ul, path: path, made: fi}, nil
}

// clearStale refuses an existing path that is not a stale socket of this
// user, and removes one that is.
func clearStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("exists and is not a socket (%v); give a path that does not exist", fi.Mode().Type())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return fmt.Errorf("is a socket of uid %d, not yours; give another path", st.Uid)
	}
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		return errors.New("another process listens on it (a serve already running?); stop it or give another path")
	}
	return os.Remove(path)
}

// unixListener removes its socket on Close while it is still the one it
// made (not one a later serve put there).
type unixListener struct {
	*net.UnixListener
	path string
	made os.FileInfo
}

func (l *unixListener) Close() error {
	err := l.UnixListener.Close()
	if fi, serr := os.Lstat(l.path); serr == nil && os.SameFile(fi, l.made) {
		_ = os.Remove(l.path)
	}
	return err
}

// exposureWarnings are what serve says on stderr about who can reach
// what it serves on addr: beyond loopback, anyone on the network; on
// loopback TCP, every local user (others lists the other users who can
// log in here); nothing on a unix socket.
func exposureWarnings(o Options, addr net.Addr, others func() []string) []string {
	what := "the project's resource names, limits, use and counters"
	if o.Page {
		what += ", and on the status page and /api/v1/ the sessions, hosts, pids and commands of its holders and waiters"
	}
	if _, unix := addr.(*net.UnixAddr); unix {
		return nil
	}
	if loopback(addr) {
		users := others()
		if len(users) == 0 {
			return nil
		}
		if len(users) > 5 {
			users = append(users[:5:5], fmt.Sprintf("and %d more", len(users)-5))
		}
		w := fmt.Sprintf("%s is loopback, but this machine has other users (%s): every local user can connect and reads %s", addr, strings.Join(users, ", "), what)
		if o.Token != "" {
			w += "; a local user with the token can act"
		}
		return []string{w + "; serve --unix PATH listens on a socket only you can open"}
	}
	ws := []string{fmt.Sprintf("--listen %s reaches beyond loopback: anyone who can connect to %s reads %s, without authentication; firewall it, or listen on 127.0.0.1", o.Listen, addr, what)}
	if o.Token != "" {
		ws = append(ws, fmt.Sprintf("--admin-token-file with --listen %s beyond loopback and no TLS: the admin token and every action cross the network in plain HTTP, readable by anyone on the way; listen on 127.0.0.1 and reach it through an SSH tunnel (ssh -L 9464:127.0.0.1:9464 HOST), or behind a TLS-terminating proxy", o.Listen))
	}
	return ws
}

// loopback reports whether addr is a loopback address, reachable from
// this machine only. An unspecified address (0.0.0.0, ::) listens on every
// interface, so it is not.
func loopback(addr net.Addr) bool {
	ta, ok := addr.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

// otherUsers are the accounts of /etc/passwd other than this process's
// that people log in as: a uid of 1000 or more (root can read anything anyway) with a shell
// that is not nologin or false. On macOS, accounts are not in
// /etc/passwd: the home directories under /Users stand for them.
func otherUsers() []string {
	me := os.Getuid()
	var out []string
	if f, err := os.Open("/etc/passwd"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fs := strings.Split(sc.Text(), ":")
			if len(fs) < 7 {
				continue
			}
			uid, err := strconv.Atoi(fs[2])
			shell := filepath.Base(fs[6])
			if err != nil || uid == me || uid < 1000 || uid == 65534 || shell == "nologin" || shell == "false" || shell == "" {
				continue
			}
			out = append(out, fs[0])
		}
	}
	if es, err := os.ReadDir("/Users"); err == nil {
		for _, e := range es {
			if n := e.Name(); e.IsDir() && n != "Shared" && n != "Guest" && !strings.HasPrefix(n, ".") {
				if fi, err := e.Info(); err == nil {
					if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != me {
						out = append(out, n)
					}
				}
			}
		}
	}
	return out
}
