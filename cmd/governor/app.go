package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/governor-dev/governor/config"
	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/filebackend"
	"github.com/governor-dev/governor/governor/redisbackend"
	"github.com/governor-dev/governor/governor/runner"
)

// Exit codes shared by run, acquire and the other commands: those of
// SPEC §4, defined once in package runner.
const (
	ExitOK        = runner.ExitOK
	ExitBusy      = runner.ExitBusy
	ExitSkipped   = runner.ExitSkipped
	ExitLeaseLost = runner.ExitLeaseLost
	ExitFailure   = runner.ExitFailure
)

// exitError carries an exit code out of a command. msg, if set, is
// printed on stderr; code 0 never reaches here.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

// exitWith returns an error that makes Main exit with code, printing err
// when it is not nil.
func exitWith(code int, err error) error { return &exitError{code: code, err: err} }

// app holds what every command shares: global flags, streams, and the
// loaded configuration.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	env            []string

	configFile, backend, redisURL, dir, project string
	json                                        bool

	loaded *config.Loaded
}

// Main runs the CLI with args and returns the process exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr, env: os.Environ()}
	root := a.rootCmd()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.Execute()
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(stderr, "governor:", strings.TrimPrefix(ee.err.Error(), "governor: "))
		}
		return ee.code
	}
	fmt.Fprintln(stderr, "governor:", strings.TrimPrefix(err.Error(), "governor: "))
	return ExitFailure
}

func (a *app) rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "governor",
		Short: "Cross-process slots, leases and rate limits for agents, evaluations and heavy jobs",
		Long: `governor decides, across processes and machines, how many things may run at once:
"at most 2 concurrent calls to provider anthropic", "one heavy job per machine",
"one writer of issue #2316 at a time".

State lives in Redis when a Redis URL is configured (--redis-url, GOVERNOR_REDIS_URL,
redis.url in exec-defaults.yaml), else in an embedded file backend on this machine
(--dir, GOVERNOR_DIR, default $XDG_STATE_HOME/governor).`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	f := root.PersistentFlags()
	f.StringVar(&a.configFile, "config", "", "config file (default: ./exec-defaults.yaml, then $XDG_CONFIG_HOME/governor/exec-defaults.yaml)")
	f.StringVar(&a.backend, "backend", "", "auto|file|redis (auto: redis when a Redis URL is configured, else file)")
	f.StringVar(&a.redisURL, "redis-url", "", "Redis URL: redis://[user:password@]host:port/db (rediss:// for TLS), redis+cluster://host:port?addr=host:port for a Cluster, redis+sentinel://host:port?master_name=NAME for Sentinel (env GOVERNOR_REDIS_URL)")
	f.StringVar(&a.dir, "dir", "", "file backend state directory (env GOVERNOR_DIR)")
	f.StringVar(&a.project, "project", "", "namespace of every resource (env GOVERNOR_PROJECT)")
	f.BoolVar(&a.json, "json", false, "machine-readable output")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return exitWith(ExitFailure, fmt.Errorf("%w\nsee '%s --help'", err, c.CommandPath()))
	})
	root.AddCommand(a.slotsCmd(), a.acquireCmd(), a.renewCmd(), a.releaseCmd(), a.configCmd(),
		a.takeoverCmd(), a.seqCmd(), a.eventsCmd(), a.serveCmd(), a.runCmd(),
		a.publishCmd())
	return root
}

// load reads the configuration once: flags > env > file > defaults.
func (a *app) load() (*config.Loaded, error) {
	if a.loaded != nil {
		return a.loaded, nil
	}
	flags := map[string]string{}
	for k, v := range map[string]string{"backend": a.backend, "redis.url": a.redisURL, "file.dir": a.dir, "project": a.project} {
		if v != "" {
			flags[k] = v
		}
	}
	l, err := config.Load(config.LoadOptions{File: a.configFile, Env: a.env, Flags: flags})
	if err != nil {
		return nil, exitWith(ExitFailure, err)
	}
	a.loaded = l
	return l, nil
}

// session is the declared session: GOVERNOR_SESSION, else host:pid.
func (a *app) session(flag string) string {
	if flag != "" {
		return flag
	}
	for _, kv := range a.env {
		if v, ok := strings.CutPrefix(kv, "GOVERNOR_SESSION="); ok {
			return v
		}
	}
	return ""
}

// openOptions adjust the Governor an app opens.
type openOptions struct {
	Session string
	Command string
	PID     int // declare this pid as the holder instead of governor's own
}

// open opens the configured backend and a Governor on it. close releases
// every lease still held and closes the backend.
func (a *app) open(ctx context.Context, o openOptions) (*governor.Governor, error) {
	l, err := a.load()
	if err != nil {
		return nil, err
	}
	c := l.Config
	var b governor.Backend
	switch c.ResolvedBackend() {
	case config.BackendRedis:
		rdb, err := redisbackend.NewClient(c.RedisURL())
		if err != nil {
			return nil, exitWith(ExitFailure, fmt.Errorf("redis URL %s: %w", config.RedactURL(c.RedisURL()), err))
		}
		rb, err := redisbackend.New(ctx, rdb, redisbackend.OwnClient())
		if err != nil {
			_ = rdb.Close()
			hint := ""
			if strings.HasPrefix(c.RedisURL(), "rediss") {
				hint = " (rediss:// speaks TLS: is that port a TLS port of the server, or a plain one for redis://?)"
			}
			return nil, exitWith(ExitFailure, fmt.Errorf("cannot reach Redis at %s: %w%s", config.RedactURL(c.RedisURL()), err, hint))
		}
		b = rb
	default:
		fb, err := filebackend.New(c.File.Dir, filebackend.Options{})
		if err != nil {
			return nil, exitWith(ExitFailure, err)
		}
		b = fb
	}
	g, err := governor.New(b, governor.Options{Project: c.Project, Session: a.session(o.Session), Command: o.Command,
		TTL: c.Lease.TTL, Heartbeat: c.Lease.Heartbeat, LockOrder: c.LockOrder, PID: o.PID})
	if err != nil {
		_ = b.Close()
		return nil, exitWith(ExitFailure, err)
	}
	return g, nil
}

// limitFor is the limit of resource: --limit when given, else the
// configuration's. A resource with neither is an error naming both ways.
func (a *app) limitFor(resource string, flagLimit int) (int, error) {
	if flagLimit != 0 {
		if flagLimit < 0 || flagLimit > governor.MaxLimit {
			return 0, exitWith(ExitFailure, fmt.Errorf("--limit %d; allowed: 1 to %d", flagLimit, governor.MaxLimit))
		}
		return flagLimit, nil
	}
	l, err := a.load()
	if err != nil {
		return 0, err
	}
	if n, ok := l.Config.Limits()[resource]; ok {
		return n, nil
	}
	return 0, exitWith(ExitFailure, fmt.Errorf("resource %q has no limit: give --limit N, or configure it in exec-defaults.yaml (resources.%s.limit)", resource, resource))
}
