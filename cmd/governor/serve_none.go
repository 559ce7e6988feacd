//go:build governor_noserve

package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/governor-dev/governor/internal/exitcode"
)

// serveCmd, in a build without serve (-tags governor_noserve), only says
// so. Such a build links neither the metrics package nor client_golang,
// procfs and protobuf, whose package initialisation every process of the
// full binary pays at its start, whatever its command: half of the
// binary's init work and 3 MiB of a bridge's resident pages
// (docs/benchmarks.md). It suits a binary that serves only as a client
// library's bridge.
func (a *app) serveCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "serve",
		Short:   "Not in this build (built with -tags governor_noserve): use a full binary",
		Example: `  governor slots`,
		Args:    cobra.ArbitraryArgs,
		// Its flags are the full build's: any is taken, so that the
		// one answer is that serve is missing.
		DisableFlagParsing: true,
		RunE: func(*cobra.Command, []string) error {
			return exitWith(exitcode.Failure, errors.New("serve: this governor was built without serve (-tags governor_noserve, "+
				"a client library's bridge); run serve with a full governor binary (a release archive's, Homebrew's or go install's)"))
		},
	}
}
