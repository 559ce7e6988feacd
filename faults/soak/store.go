//go:build linux

package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/governor-dev/governor/faults"
	"github.com/governor-dev/governor/internal/redistest"
)

// store is where the soak's state lives, with the faults that only it
// can suffer.
type store interface {
	flags() []string
	// faults are the store's own faults: each injects, waits a moment
	// and ends the fault before it returns.
	faults() map[string]func(ctx context.Context)
	heal()
	// size is the state's size: bytes of the state directory, or keys.
	size() (what string, n int64)
	url() string // the Redis URL the monitor reads ("" for the file backend)
	// env selects the store for a process that takes no flags (the
	// clients' bridges): GOVERNOR_BACKEND and its location.
	env() []string
	dir() string // the state directory ("" for Redis)
	close()
}

// fileStore is the file backend, its state directory on a small tmpfs
// when the soak may mount one (root), so that a full disk can be
// injected.
type fileStore struct {
	s      *soak
	path   string
	tmpfs  bool
	filler string
}

func newFileStore(s *soak) (*fileStore, error) {
	f := &fileStore{s: s, path: filepath.Join(s.dir, "state")}
	if err := os.Mkdir(f.path, 0o700); err != nil {
		return nil, err
	}
	if err := syscall.Mount("tmpfs", f.path, "tmpfs", 0, "size=32m,mode=0700"); err != nil {
		s.skip("full disk (file backend)", "cannot mount a tmpfs for the state directory ("+err.Error()+"): run as root to inject it")
	} else {
		f.tmpfs = true
	}
	return f, nil
}

func (f *fileStore) flags() []string { return []string{"--backend", "file", "--dir", f.path} }
func (f *fileStore) url() string     { return "" }
func (f *fileStore) env() []string {
	return []string{"GOVERNOR_BACKEND=file", "GOVERNOR_DIR=" + f.path}
}
func (f *fileStore) dir() string { return f.path }

func (f *fileStore) faults() map[string]func(ctx context.Context) {
	if !f.tmpfs {
		return nil
	}
	return map[string]func(ctx context.Context){"disk full (tmpfs filled for 3 s)": f.fill}
}

// fill writes a file until the tmpfs is full, waits 3 s, and removes it.
func (f *fileStore) fill(ctx context.Context) {
	f.filler = filepath.Join(f.path, "zz-filler")
	w, err := os.OpenFile(f.filler, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return
	}
	buf := make([]byte, 1<<20)
	for {
		if _, err := w.Write(buf); err != nil {
			break
		}
	}
	w.Close()
	sleepCtx(ctx, 3*time.Second)
	f.heal()
}

func (f *fileStore) heal() {
	if f.filler != "" {
		_ = os.Remove(f.filler)
	}
}

func (f *fileStore) size() (string, int64) {
	var n int64
	_ = filepath.WalkDir(f.path, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() != "zz-filler" {
			if i, err := d.Info(); err == nil {
				n += i.Size()
			}
		}
		return nil
	})
	return "state directory bytes", n
}

func (f *fileStore) close() {
	if f.tmpfs {
		if err := syscall.Unmount(f.path, syscall.MNT_DETACH); err != nil {
			fmt.Fprintln(os.Stderr, "soak: unmount", f.path+":", err)
		}
	}
}

// redisStore is a redis-server the soak starts, reached by the load
// through a fault proxy (connection cuts) and by the monitor directly.
type redisStore struct {
	s     *soak
	srv   *redistest.Server
	proxy *faults.Proxy
	rc    *redis.Client
}

func newRedisStore(s *soak) (*redisStore, error) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		return nil, errors.New("redis-server not found in PATH: install it (apt-get install -y redis-server)")
	}
	d := filepath.Join(s.dir, "redis")
	if err := os.Mkdir(d, 0o700); err != nil {
		return nil, err
	}
	// Bound to loopback, with a password of its own: no other user of
	// the machine reaches it, during the soak or after a kill -9 of it.
	pw := make([]byte, 16)
	if _, err := rand.Read(pw); err != nil {
		return nil, err
	}
	srv, err := redistest.Options{Password: hex.EncodeToString(pw), Spawn: start}.StartServer(d)
	if err != nil {
		return nil, err
	}
	p, err := faults.NewProxy(srv.Addr)
	if err != nil {
		srv.Stop()
		return nil, err
	}
	// The monitor's client logs every failed dial while Redis restarts:
	// noise in the soak's output, whose faults say when.
	redis.SetLogger(silentLog{})
	return &redisStore{s: s, srv: srv, proxy: p, rc: redis.NewClient(&redis.Options{Addr: srv.Addr, Password: srv.Password})}, nil
}

type silentLog struct{}

func (silentLog) Printf(context.Context, string, ...any) {}

// flags leave the URL, which has the password, to env: a command line
// is any user's to read (ps). The state dir (GOVERNOR_DIR) holds the
// witness of Redis's state that the soak's processes share, as a
// machine's do (docs/redis.md).
func (r *redisStore) flags() []string { return []string{"--backend", "redis"} }
func (r *redisStore) url() string     { return r.srv.URL() }
func (r *redisStore) env() []string {
	return []string{"GOVERNOR_BACKEND=redis", "GOVERNOR_REDIS_URL=redis://:" + r.srv.Password + "@" + r.proxy.Addr() + "/0",
		"GOVERNOR_DIR=" + r.stateDir()}
}
func (r *redisStore) stateDir() string { return filepath.Join(r.s.dir, "state") }
func (r *redisStore) dir() string      { return "" }

func (r *redisStore) faults() map[string]func(ctx context.Context) {
	f := map[string]func(ctx context.Context){
		// SHUTDOWN SAVE, not SAVE then a kill: a write between the two
		// (a grant, a renewal) would be lost with no evidence a process
		// could see (the state rolled back, not gone: what the
		// quarantine cannot see, docs/redis.md), which is no restart
		// with persistence.
		"redis restart after SHUTDOWN SAVE (nothing lost)": func(ctx context.Context) {
			_ = r.rc.ShutdownSave(ctx).Err() // exits after the dump; its reply may not come
			_ = r.srv.Restart()              // the same --dir: the dump is loaded
		},
		"connection cut (proxy)": func(context.Context) { r.proxy.Cut() },
		"network stall 1.5 s (proxy blackhole)": func(ctx context.Context) {
			r.proxy.Blackhole()
			sleepCtx(ctx, 1500*time.Millisecond)
			r.proxy.Heal()
		},
	}
	if r.s.o.loss {
		// Noted before the loss (s.lost): the live limit goes with the
		// data.
		f["redis restart without persistence"] = func(context.Context) {
			r.s.lost(true)
			_ = os.Remove(filepath.Join(r.srv.Dir, "dump.rdb"))
			_ = r.srv.Restart()
			r.s.newClients()
		}
		f["redis FLUSHALL"] = func(ctx context.Context) {
			r.s.lost(true)
			_ = r.rc.FlushAll(ctx).Err()
			r.s.newClients()
		}
	}
	return f
}

func (r *redisStore) heal() { r.proxy.Heal() }

func (r *redisStore) size() (string, int64) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	n, err := r.rc.DBSize(ctx).Result()
	if err != nil {
		return "redis keys", -1
	}
	return "redis keys", n
}

func (r *redisStore) close() {
	_ = r.rc.Close()
	_ = r.proxy.Close()
	r.srv.Stop()
}
