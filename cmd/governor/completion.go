package main

import (
	"context"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/governor-dev/governor/config"
	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/acquire"
)

// completionTimeout bounds the backend reads of one <TAB>: a backend that
// does not answer completes nothing rather than hanging the shell.
const completionTimeout = 2 * time.Second

// fileFlags are the flags that name files or directories: the only ones
// the shell completes with paths.
var fileFlags = map[string]bool{"config": true, "dir": true, "record": true}

// complete registers shell completion on root's commands: flag values
// (--if-busy, --backend), resource names, lease handles and lease ids;
// every other flag value and argument completes nothing rather than
// file names.
func (a *app) complete(root *cobra.Command) {
	words := func(ws ...string) cobra.CompletionFunc {
		return cobra.FixedCompletions(ws, cobra.ShellCompDirectiveNoFileComp)
	}
	resources := func(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return a.completeResources(cmd, args), cobra.ShellCompDirectiveNoFileComp
	}
	leases := func(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return a.completeLeases(cmd, ""), cobra.ShellCompDirectiveNoFileComp
	}
	_ = root.RegisterFlagCompletionFunc("backend", words(config.BackendAuto, config.BackendFile, config.BackendRedis))
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		switch c.CommandPath() {
		case "governor slots", "governor events":
			c.ValidArgsFunction = resources
		case "governor acquire", "governor takeover", "governor cancel", "governor pause", "governor resume", "governor limit":
			c.ValidArgsFunction = onlyFirst(resources)
		case "governor renew", "governor release":
			c.ValidArgsFunction = onlyFirst(leases)
		case "governor seq next", "governor config show", "governor config check", "governor serve":
			c.ValidArgsFunction = cobra.NoFileCompletions
		}
		if f := c.Flags().Lookup("if-busy"); f != nil {
			_ = c.RegisterFlagCompletionFunc("if-busy", words(acquire.IfBusyPolicies...))
		}
		if c.Flags().Lookup("resource") != nil {
			_ = c.RegisterFlagCompletionFunc("resource", resources)
		}
		if c.Flags().Lookup("provider") != nil {
			_ = c.RegisterFlagCompletionFunc("provider", func(cmd *cobra.Command, _ []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
				return a.completeProviders(), cobra.ShellCompDirectiveNoFileComp
			})
		}
		if c.Flags().Lookup("budget") != nil {
			_ = c.RegisterFlagCompletionFunc("budget", func(cmd *cobra.Command, _ []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
				return a.completeBudgets(), cobra.ShellCompDirectiveNoFileComp
			})
		}
		if c.CommandPath() == "governor budgets" || c.CommandPath() == "governor budget" {
			c.ValidArgsFunction = func(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
				if c.CommandPath() == "governor budget" && len(args) > 0 {
					return nil, cobra.ShellCompDirectiveNoFileComp
				}
				return a.completeBudgets(), cobra.ShellCompDirectiveNoFileComp
			}
		}
		if c.CommandPath() == "governor seq next" {
			_ = c.RegisterFlagCompletionFunc("lease", leases)
		}
		if c.CommandPath() == "governor takeover" {
			_ = c.RegisterFlagCompletionFunc("lease", func(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
				if len(args) == 0 {
					return nil, cobra.ShellCompDirectiveNoFileComp
				}
				return a.completeLeases(cmd, args[0]), cobra.ShellCompDirectiveNoFileComp
			})
		}
		// Every other flag's value completes nothing: no file names for a
		// duration, a number or a session id.
		c.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) { noFiles(c, f) })
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	root.PersistentFlags().VisitAll(func(f *pflag.Flag) { noFiles(root, f) })
}

// noFiles makes flag f of c complete nothing, unless it names a file or
// already completes something.
func noFiles(c *cobra.Command, f *pflag.Flag) {
	if fileFlags[f.Name] || f.Value.Type() == "bool" {
		return
	}
	if _, ok := c.GetFlagCompletionFunc(f.Name); ok {
		return
	}
	_ = c.RegisterFlagCompletionFunc(f.Name, cobra.NoFileCompletions)
}

// onlyFirst completes the first argument with fn and nothing after it.
func onlyFirst(fn cobra.CompletionFunc) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return fn(cmd, args, toComplete)
	}
}

// completeResources lists the configured resources and those with state,
// but not those already in args.
func (a *app) completeResources(cmd *cobra.Command, args []string) []string {
	names := map[string]bool{}
	if l, err := a.load(); err == nil {
		for n := range l.Config.Limits() {
			names[n] = true
		}
	}
	_ = a.withGovernor(cmd, func(ctx context.Context, g *governor.Governor) error {
		have, err := g.Resources(ctx)
		for _, n := range have {
			names[n] = true
		}
		return err
	})
	for _, n := range args {
		delete(names, n)
	}
	return sorted(names)
}

// completeProviders lists the configured providers.
func (a *app) completeProviders() []string {
	return a.configured(func(c config.Config) []string { return slices.Collect(maps.Keys(c.Providers)) })
}

// completeBudgets lists the configured spend budgets.
func (a *app) completeBudgets() []string {
	return a.configured(func(c config.Config) []string { return slices.Collect(maps.Keys(c.Budgets)) })
}

// configured lists, sorted, the names that of finds in the loaded
// configuration
// (none when it does not load).
func (a *app) configured(of func(config.Config) []string) []string {
	l, err := a.load()
	if err != nil {
		return nil
	}
	names := of(l.Config)
	slices.Sort(names)
	return names
}

// completeLeases lists lease handles, RESOURCE@LEASE_ID, of every
// resource with state; or, for one resource, its lease ids, each with
// its holder as the description.
func (a *app) completeLeases(cmd *cobra.Command, resource string) []string {
	var out []string
	_ = a.withGovernor(cmd, func(ctx context.Context, g *governor.Governor) error {
		names := []string{resource}
		if resource == "" {
			var err error
			if names, err = g.Resources(ctx); err != nil {
				return err
			}
		}
		for _, n := range names {
			st, err := g.Status(ctx, n)
			if err != nil {
				return err
			}
			for _, h := range st.Holders {
				item := governor.Handle{Resource: n, ID: h.LeaseID}.String()
				if resource != "" {
					item = h.LeaseID
				}
				out = append(out, cobra.CompletionWithDesc(item, strings.TrimSpace("session "+h.Session)))
			}
		}
		return nil
	})
	return out
}

// withGovernor runs fn with a Governor on the configured backend, bounded
// by completionTimeout. Failures complete nothing and print nothing.
func (a *app) withGovernor(cmd *cobra.Command, fn func(ctx context.Context, g *governor.Governor) error) error {
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, completionTimeout)
	defer cancel()
	g, err := a.open(ctx, openOptions{})
	if err != nil {
		return err
	}
	defer g.Close()
	return fn(ctx, g)
}

func sorted(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
