package main

import (
	"context"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/acquire"
	"github.com/governor-dev/governor/internal/bridge"
	"github.com/governor-dev/governor/internal/buildinfo"
	"github.com/governor-dev/governor/internal/exitcode"
)

func (a *app) bridgeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "bridge",
		Short: "Serve one client library (Python, TypeScript) over stdin/stdout",
		Example: `  governor bridge    # started by the Python and TypeScript clients, not by hand
  GOVERNOR_BIN=/usr/local/bin/governor python3 agent.py`,
		Long: `bridge is the co-process of governor's client libraries (clients/python,
clients/typescript): the client starts it with pipes and sends requests, one JSON
object per line, on its stdin; replies and events come on stdout; stderr is for
people. The protocol is docs/bridge-protocol.md (protocol 1).

One bridge serves one client process: every lease it takes is declared as owned by
the process hello names (its pid and start time), so a killed client is reclaimed
at once; heartbeats run in the bridge. It reads the same configuration as every
other command (--config, exec-defaults.yaml, GOVERNOR_*, --dir, --redis-url-file,
--project) and acquires through the same path as 'governor run'; a resource the
configuration opts in (capacity: true) is granted from the bridge's capacity share,
with no round trip per grant (docs/capacity.md). When its stdin
ends, the client says bye or dies, or on SIGTERM/SIGINT, it releases everything
it holds and exits 0.

Exit codes: 0 the client is gone and everything is released; 125 bad flags, bad
config, or stdin could not be read.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if os.Getenv("GOMAXPROCS") == "" {
				// One processor: the bridge waits on pipes and Redis and
				// computes little, and with more each request woke
				// another thread to run it (docs/bridge-protocol.md).
				runtime.GOMAXPROCS(1)
			}
			l, err := a.load()
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			cat := l.Catalog()
			build := buildinfo.Read()
			c := bridge.Config{
				Version: build.Version,
				Commit:  build.Revision,
				Backend: l.Config.ResolvedBackend(),
				Open: func(ctx context.Context, pid int, session string) (*governor.Governor, error) {
					return a.open(ctx, openOptions{PID: pid, Session: session, Command: "governor bridge", Capacity: true})
				},
				Acquire: bridge.AcquirePipeline(cat),
				Spend:   l.Config,
				Stderr:  a.stderr,
				LimitFor: func(resource string, flag int) (int, string, error) {
					return acquire.LimitFor(cat, resource, flag)
				},
				ProviderLimits: func(name string) governor.ProviderLimits {
					p, _ := cat.Provider(name)
					return p.Limits
				},
			}
			if err := bridge.Serve(ctx, a.stdin, a.stdout, c); err != nil {
				return exitWith(exitcode.Failure, err)
			}
			return nil
		},
	}
}
