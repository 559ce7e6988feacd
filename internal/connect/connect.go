// Package connect opens the backend a configuration selects and a
// Governor on it: the one place every command and `governor run` (and
// the bridge) connect, with the same errors and the Redis URL's password
// redacted in them.
package connect

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/governor-dev/governor/config"
	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/filebackend"
	"github.com/governor-dev/governor/governor/redisbackend"
	"github.com/governor-dev/governor/internal/exitcode"
)

// EnvSession is the session a process declares when no --session says
// one: a run sets it for its command.
const EnvSession = "GOVERNOR_SESSION"

// Options adjust the Governor Open opens. The zero value declares
// governor's own pid, the default session and no command.
type Options struct {
	// Project overrides the configured project ("": the configured one).
	Project string
	// Session is --session: "" means $GOVERNOR_SESSION from the
	// environment, else governor's default, host:pid (see Session).
	Session string
	Command string
	PID     int // declare this pid as the holder instead of governor's own (governor.NoPID: none)
	// GovernorPID is declared beside PID as the process holding the
	// lease for it (run: governor itself, PID its watchdog).
	GovernorPID int
	// Cgroup and RunID are declared with PID: what proves the run's
	// command tree alive once governor and its watchdog are gone.
	Cgroup, RunID string
	// Warn is told the backend's warnings (nil: dropped).
	Warn func(string)
	// Capacity grants the slots of the resources the configuration
	// opts in (capacity: true) from this process's share
	// (governor.Options.Capacity): for a process that serves many
	// calls, the bridge; never an exec run.
	Capacity bool
}

// Open opens the backend l selects and a Governor on it; env is the
// caller's environment (for GOVERNOR_SESSION). Closing the Governor
// closes the backend. Every error exits 125 (exitcode.Failure) and names
// the Redis URL with its password redacted; nothing is left open.
func Open(ctx context.Context, l *config.Loaded, env []string, o Options) (*governor.Governor, error) {
	c := l.Config
	b, err := StoreOf(&c).Open(ctx, o.Warn)
	if err != nil {
		return nil, err
	}
	t := c.Timing()
	project := c.Project
	if o.Project != "" {
		project = o.Project
	}
	opts := governor.Options{Project: project, Session: Session(o.Session, env), Command: o.Command,
		TTL: t.TTL, Heartbeat: t.Heartbeat, SafetyMargin: t.SafetyMargin, LockOrder: c.LockOrder, PID: o.PID, GovernorPID: o.GovernorPID, Cgroup: o.Cgroup, RunID: o.RunID}
	if o.Capacity {
		opts.Capacity = c.Capacity()
	}
	g, err := governor.New(b, opts)
	if err != nil {
		_ = b.Close()
		return nil, exitcode.With(exitcode.Failure, err)
	}
	return g, nil
}

// Store is what opening the backend of a configuration takes, as plain
// data one process can hand another (a run's watchdog, which records
// what it did): it holds the Redis URL with its password.
type Store struct {
	Backend        string `json:"backend"` // config.BackendRedis or config.BackendFile
	RedisURL       string `json:"redis_url,omitempty"`
	AllowEviction  bool   `json:"allow_eviction,omitempty"`
	LossQuarantine bool   `json:"loss_quarantine,omitempty"`
	Dir            string `json:"dir,omitempty"`
	// WitnessDir holds the machine's witness of the Redis server's state
	// (redisbackend.Witness): the state dir.
	WitnessDir string `json:"witness_dir,omitempty"`
}

// StoreOf returns the store c selects.
func StoreOf(c *config.Config) Store {
	if c.ResolvedBackend() == config.BackendRedis {
		return Store{Backend: config.BackendRedis, RedisURL: c.RedisURL(), AllowEviction: c.Redis.AllowEviction,
			LossQuarantine: c.Redis.Quarantine(), WitnessDir: c.File.Dir}
	}
	return Store{Backend: config.BackendFile, Dir: c.File.Dir}
}

// Open opens the store's backend, its warnings told to warn (nil:
// dropped). Every error exits 125 (exitcode.Failure) and names the
// Redis URL with its password redacted; nothing is left open.
func (s Store) Open(ctx context.Context, warn func(string)) (governor.Backend, error) {
	if s.Backend != config.BackendRedis {
		fb, err := filebackend.New(s.Dir, filebackend.Options{})
		if err != nil {
			return nil, exitcode.With(exitcode.Failure, err)
		}
		return fb, nil
	}
	rdb, err := redisbackend.NewClient(s.RedisURL)
	if err != nil {
		return nil, exitcode.With(exitcode.Failure, fmt.Errorf("redis URL %s: %w", config.RedactURL(s.RedisURL), err))
	}
	if warn == nil {
		warn = func(string) {}
	}
	opts := []redisbackend.Option{redisbackend.OwnClient(), redisbackend.Warn(warn),
		redisbackend.LossQuarantine(s.LossQuarantine)}
	if s.AllowEviction {
		opts = append(opts, redisbackend.AllowEviction())
	}
	if s.WitnessDir != "" {
		opts = append(opts, redisbackend.Witness(s.WitnessDir, config.RedactURL(s.RedisURL)))
	}
	rb, err := redisbackend.New(ctx, rdb, opts...)
	if err != nil {
		_ = rdb.Close()
		hint := ""
		var ne net.Error
		switch {
		case strings.HasPrefix(s.RedisURL, "rediss"):
			hint = " (rediss:// speaks TLS: is that port a TLS port of the server, or a plain one for redis://?)"
		case errors.As(err, &ne):
			hint = fmt.Sprintf("\ncheck: is redis-server running there ('redis-cli -u %s ping')? is the URL right (--redis-url, GOVERNOR_REDIS_URL, redis.url in exec-defaults.yaml)? without Redis, --backend file keeps the state on this machine",
				config.RedactURL(s.RedisURL))
		}
		return nil, exitcode.With(exitcode.Failure, fmt.Errorf("cannot reach Redis at %s: %w%s", config.RedactURL(s.RedisURL), err, hint))
	}
	return rb, nil
}

// Session is the session to declare: flag (--session) when set, else
// $GOVERNOR_SESSION from env (its last value, as in a shell), else ""
// (governor's default, host:pid). Every command asks it.
func Session(flag string, env []string) string {
	if flag != "" {
		return flag
	}
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], EnvSession+"="); ok {
			return v
		}
	}
	return ""
}
