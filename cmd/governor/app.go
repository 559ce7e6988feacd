package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/governor-dev/governor/config"
	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/safetext"
	"github.com/governor-dev/governor/internal/acquire"
	"github.com/governor-dev/governor/internal/connect"
	"github.com/governor-dev/governor/internal/exitcode"
	"github.com/governor-dev/governor/internal/view"
	"github.com/governor-dev/governor/internal/words"
)

// exitWith returns an error that makes Main exit with code, printing err
// when it is not nil: for a failure whose code the command decides.
func exitWith(code int, err error) error { return exitcode.With(code, err) }

// app holds what every command shares: global flags, streams, and the
// loaded configuration.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	env            []string

	configFile, backend, redisURL, dir, project string
	redisURLFile                                string
	json                                        bool
	// allowEviction, lossQuarantine: "" when the flag was not given.
	allowEviction, lossQuarantine string
	// quiet is --quiet of run and acquire: not getting the slots is told
	// by the exit code alone.
	quiet bool

	loaded *config.Loaded
}

// Main runs the CLI with args and returns the process exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr, env: os.Environ()}
	if code, ok := a.watchdogMain(args); ok {
		return code
	}
	only := ""
	if len(args) > 0 {
		only = args[0]
	}
	root := a.rootCmd(only)
	if len(args) > 0 && (args[0] == cobra.ShellCompRequestCmd || args[0] == cobra.ShellCompNoDescRequestCmd) {
		// Only a <TAB> uses what complete registers: every other command
		// starts without walking the command tree for it.
		a.complete(root)
	}
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.Execute()
	code := exitcode.For(err)
	if code == exitcode.OK {
		return exitcode.OK
	}
	if ee := (*exitcode.Error)(nil); errors.As(err, &ee) {
		err = ee.Err // nil: the command has said all there is
	}
	if !a.json {
		a.json = jsonFlag(args) // cobra finds an unknown command before parsing flags
	}
	a.report(code, err)
	return code
}

// report tells why a command ends with code: the one place every
// failure is written on stderr. With --json it is one JSON object on one
// line, {"exit_code", "error"} (and "resource" and "holders" when the
// slots were not acquired); without, words.WriteReport's text. With
// --quiet, not getting the slots (73, 75) is told by the exit code alone.
// A nil err writes nothing: the command has said all there is.
func (a *app) report(code int, err error) {
	if err == nil {
		return
	}
	var na *acquire.NotAcquiredError
	notAcquired := errors.As(err, &na)
	if notAcquired && a.quiet {
		return
	}
	if !a.json {
		if notAcquired && a.loaded != nil {
			na.Store = a.loaded.StoreFlags() // the takeover hint acts on this store
		}
		words.WriteReport(a.stderr, err)
		return
	}
	e := errorJSON{ExitCode: code, Error: words.Message(err)}
	if notAcquired && na.Busy != nil {
		r := view.SlotsOf("", []governor.Status{na.Busy.Status}, nil).Resources[0]
		e.Resource, e.Holders = na.Busy.Resource, r.Holders
	}
	b, jerr := json.Marshal(e)
	if jerr != nil { // cannot happen: the fields are plain data
		b = []byte(fmt.Sprintf(`{"exit_code":%d,"error":%q}`, code, e.Error))
	}
	fmt.Fprintf(a.stderr, "%s\n", safetext.JSON(b))
}

// jsonFlag reports whether args set --json, reading nothing else: for
// the failures cobra reports before it parses the flags.
func jsonFlag(args []string) bool {
	var on bool
	fs := pflag.NewFlagSet("governor", pflag.ContinueOnError)
	fs.ParseErrorsWhitelist.UnknownFlags = true
	fs.SetOutput(io.Discard)
	fs.BoolVar(&on, "json", false, "")
	_ = fs.Parse(args)
	return on
}

// errorJSON is the stable --json schema of a failure, on stderr.
type errorJSON struct {
	ExitCode int           `json:"exit_code"`
	Error    string        `json:"error"`
	Resource string        `json:"resource,omitempty"`
	Holders  []view.Holder `json:"holders,omitempty"`
}

// A namedCmd is a top-level command: its name, and what makes it.
type namedCmd struct {
	name string
	make func() *cobra.Command
}

// commands are the top-level commands, in the order --help lists them
// (by name).
func (a *app) commands() []namedCmd {
	return []namedCmd{{"slots", a.slotsCmd}, {"acquire", a.acquireCmd}, {"renew", a.renewCmd}, {"release", a.releaseCmd},
		{"config", a.configCmd}, {"takeover", a.takeoverCmd}, {"seq", a.seqCmd}, {"events", a.eventsCmd}, {"serve", a.serveCmd},
		{"run", a.runCmd}, {"publish", a.publishCmd}, {"touch", a.touchCmd}, {"cancel", a.cancelCmd}, {"pause", a.pauseCmd},
		{"resume", a.resumeCmd}, {"limit", a.limitCmd}, {"backoff", a.backoffCmd}, {"bridge", a.bridgeCmd},
		{"budgets", a.budgetsCmd}, {"budget", a.budgetCmd}, {"settle", a.settleCmd}, {"version", a.versionCmd}}
}

// rootCmd makes the command tree. When only names a top-level command
// (the first argument: `governor bridge ...`), the root gets that
// command alone, as the whole tree has it: a process starts without
// making the twenty others (a bridge's start, every run). Anything else
// (a flag first, help, completion, an unknown or no command) gets the
// whole tree.
func (a *app) rootCmd(only string) *cobra.Command {
	root := &cobra.Command{
		Use:   "governor",
		Short: "Cross-process slots, leases and rate limits for agents, evaluations and heavy jobs",
		Example: `  governor run --resource heavy -- make build     # one at a time: a mutex
  governor slots                                  # what is held, by whom
  governor help run`,
		Long: `governor decides, across processes and machines, how many things may run at once:
"at most 2 concurrent calls to provider anthropic", "one heavy job per machine",
"one writer of issue #2316 at a time".

State lives in Redis when a Redis URL is configured (--redis-url, --redis-url-file,
GOVERNOR_REDIS_URL, redis.url in exec-defaults.yaml), else in an embedded file
backend on this machine (--dir, GOVERNOR_DIR, default $XDG_STATE_HOME/governor).

With --json, output is JSON, and every failure is one JSON object on one line of
stderr: {"exit_code", "error"}, with "resource" and "holders" when slots were not
acquired.

Exit codes, shared by every command (each command's --help lists its own):
  0    done
  73   not acquired: busy, or --wait-timeout passed (also a refused takeover or a stale token)
  75   skipped: busy with --if-busy skip
  76   superseded while waiting by a newer one with the same --supersede key
  122  the lease was lost
  124  run: --timeout passed; the command tree was stopped
  125  governor's own failure: bad flags, bad config, unknown resource, backend unreachable
  126  run: the command cannot be executed
  127  run: the command was not found`,
		Version:       version(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("governor {{.Version}}\n")
	root.SetHelpTemplate(helpTemplate)
	f := root.PersistentFlags()
	f.StringVar(&a.configFile, "config", "", "config file (default: ./exec-defaults.yaml, then $XDG_CONFIG_HOME/governor/exec-defaults.yaml); read only if owned by you or root and not writable by others")
	f.StringVar(&a.backend, "backend", "", "auto|file|redis (auto: redis when a Redis URL is configured, else file)")
	f.StringVar(&a.redisURL, "redis-url", "", "Redis URL: redis://[user:password@]host:port/db (rediss:// for TLS), redis+cluster://host:port?addr=host:port for a Cluster, redis+sentinel://host:port?master_name=NAME for Sentinel (env GOVERNOR_REDIS_URL); a password here is visible to every user of the machine (ps): give it in GOVERNOR_REDIS_URL or --redis-url-file")
	f.StringVar(&a.redisURLFile, "redis-url-file", "", "read the Redis URL from FILE (owned by you, unreadable by other users: chmod 600), keeping its password off the command line")
	f.StringVar(&a.dir, "dir", "", "file backend state directory (env GOVERNOR_DIR)")
	f.StringVar(&a.project, "project", "", "namespace of every resource (env GOVERNOR_PROJECT)")
	f.BoolVar(&a.json, "json", false, "machine-readable output")
	f.Var(boolFlag{&a.allowEviction}, "allow-eviction", "run on a Redis whose maxmemory-policy can evict governor's keys (config redis.allow_eviction; see docs/redis.md)")
	f.Lookup("allow-eviction").NoOptDefVal = "true"
	f.Var(boolFlag{&a.lossQuarantine}, "loss-quarantine", "after Redis lost its data, hold new grants on an affected resource for the longest lease TTL (default true; config redis.loss_quarantine; see docs/redis.md)")
	f.Lookup("loss-quarantine").NoOptDefVal = "true"
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return exitWith(exitcode.Failure, fmt.Errorf("%w\nsee '%s --help'", flagError(c, err), c.CommandPath()))
	})
	cmds := a.commands()
	for _, c := range cmds {
		if c.name == only {
			root.AddCommand(c.make())
			return root
		}
	}
	for _, c := range cmds {
		root.AddCommand(c.make())
	}
	// cobra's own help and completion commands list their exit codes too.
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "help" || c.Name() == "completion" {
			cobraHelp(c)
		}
	}
	return root
}

// load reads the configuration once: flags > env > file > defaults.
func (a *app) load() (*config.Loaded, error) {
	if a.loaded != nil {
		return a.loaded, nil
	}
	flags := map[string]string{}
	for k, v := range map[string]string{"backend": a.backend, "redis.url": a.redisURL, "file.dir": a.dir, "project": a.project,
		"redis.allow_eviction": a.allowEviction, "redis.loss_quarantine": a.lossQuarantine} {
		if v != "" {
			flags[k] = v
		}
	}
	if err := a.conflictingFlags(); err != nil {
		return nil, exitWith(exitcode.Failure, err)
	}
	if a.redisURLFile != "" {
		if a.redisURL != "" {
			return nil, exitWith(exitcode.Failure, errors.New("give one of --redis-url and --redis-url-file"))
		}
		u, err := config.ReadURLFile(a.redisURLFile)
		if err != nil {
			return nil, exitWith(exitcode.Failure, err)
		}
		flags["redis.url"] = u
	}
	l, err := config.Load(config.LoadOptions{File: a.configFile, Env: a.env, Flags: flags})
	if err != nil {
		return nil, exitWith(exitcode.Failure, err)
	}
	a.loaded = l
	return l, nil
}

// openOptions adjust the Governor an app opens (connect.Options).
type openOptions = connect.Options

// open opens the configured backend and a Governor on it (connect.Open),
// its warnings on stderr.
func (a *app) open(ctx context.Context, o openOptions) (*governor.Governor, error) {
	l, err := a.load()
	if err != nil {
		return nil, err
	}
	o.Warn = a.warn
	return connect.Open(ctx, l, a.env, o)
}

// boolFlag is a flag that records its value as given ("true", "false"),
// or "" when absent, so that config.Load sees only flags that were set;
// config checks the value.
type boolFlag struct{ v *string }

func (f boolFlag) String() string {
	if f.v == nil {
		return ""
	}
	return *f.v
}
func (f boolFlag) Set(s string) error { *f.v = s; return nil }
func (f boolFlag) Type() string       { return "bool" }

// warn writes a warning line on stderr: with --json, as {"warning": msg}.
func (a *app) warn(msg string) {
	if a.json {
		b, _ := json.Marshal(map[string]string{"warning": msg})
		fmt.Fprintf(a.stderr, "%s\n", b)
		return
	}
	fmt.Fprintln(a.stderr, msg)
}
