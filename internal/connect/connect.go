// Package connect opens the backend a configuration selects and a
// Governor on it: the one place every command and `governor run` (and
// the bridge) connect, with the same errors and the Redis URL's password
// redacted in them.
package connect

import (
	"context"
	"fmt"
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
}

// Open opens the backend l selects and a Governor on it; env is the
// caller's environment (for GOVERNOR_SESSION). Closing the Governor
// closes the backend. Every error exits 125 (exitcode.Failure) and names
// the Redis URL with its password redacted; nothing is left open.
func Open(ctx context.Context, l *config.Loaded, env []string, o Options) (*governor.Governor, error) {
	c := l.Config
	var b governor.Backend
	switch c.ResolvedBackend() {
	case config.BackendRedis:
		rdb, err := redisbackend.NewClient(c.RedisURL())
		if err != nil {
			return nil, exitcode.With(exitcode.Failure, fmt.Errorf("redis URL %s: %w", config.RedactURL(c.RedisURL()), err))
		}
		warn := o.Warn
		if warn == nil {
			warn = func(string) {}
		}
		opts := []redisbackend.Option{redisbackend.OwnClient(), redisbackend.Warn(warn),
			redisbackend.LossQuarantine(c.Redis.Quarantine())}
		if c.Redis.AllowEviction {
			opts = append(opts, redisbackend.AllowEviction())
		}
		rb, err := redisbackend.New(ctx, rdb, opts...)
		if err != nil {
			_ = rdb.Close()
			hint := ""
			if strings.HasPrefix(c.RedisURL(), "rediss") {
				hint = " (rediss:// speaks TLS: is that port a TLS port of the server, or a plain one for redis://?)"
			}
			return nil, exitcode.With(exitcode.Failure, fmt.Errorf("cannot reach Redis at %s: %w%s", config.RedactURL(c.RedisURL()), err, hint))
		}
		b = rb
	default:
		fb, err := filebackend.New(c.File.Dir, filebackend.Options{})
		if err != nil {
			return nil, exitcode.With(exitcode.Failure, err)
		}
		b = fb
	}
	t := c.Timing()
	project := c.Project
	if o.Project != "" {
		project = o.Project
	}
	g, err := governor.New(b, governor.Options{Project: project, Session: Session(o.Session, env), Command: o.Command,
		TTL: t.TTL, Heartbeat: t.Heartbeat, SafetyMargin: t.SafetyMargin, LockOrder: c.LockOrder, PID: o.PID, GovernorPID: o.GovernorPID, Cgroup: o.Cgroup, RunID: o.RunID})
	if err != nil {
		_ = b.Close()
		return nil, exitcode.With(exitcode.Failure, err)
	}
	return g, nil
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
