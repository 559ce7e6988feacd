package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/governor-dev/governor/config"
	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/humantime"
	"github.com/governor-dev/governor/internal/exitcode"
	"github.com/governor-dev/governor/internal/nearest"
)

func (a *app) backoffCmd() *cobra.Command {
	var retryAfter time.Duration
	var force bool
	cmd := &cobra.Command{
		Use:   "backoff PROVIDER [--retry-after D]",
		Short: "Report a provider's rate-limit signal: the provider cools off for every process",
		Long: `backoff reports that provider PROVIDER refused a call for its rate limits (an
HTTP 429 or 529), so that every process of the project backs off, not only the
one that saw it: the provider cools off until --retry-after D from now on the
backend's clock (the provider's retry-after; without it, ` + governor.DefaultCoolOff.String() + ` plus up to a
quarter more at random, so that the fleet's next calls do not all come at
once). A cool-off already in force that ends later is kept. A provider
with adaptive concurrency (providers.NAME.adaptive) also has its limit halved.

During a cool-off 'governor run --provider PROVIDER', 'governor acquire
provider:PROVIDER' and the library's Provider.Do grant nothing new: they wait
for its end, or with --if-busy fail exit 73 saying until when; holders keep
their slots. At the end the queue is served in FIFO order. 'governor events
provider:PROVIDER' shows each cool-off and who asked for it.

An agent in any language reports a 429 with it, or runs its calls under
'governor run --provider PROVIDER --backoff-exit-code N' and exits N.

PROVIDER must be configured (providers.NAME) or already have state in the
backend (used by 'governor run --provider NAME'): a typo would otherwise cool off
a provider nobody uses and leave the real one unthrottled. Another name is
refused, naming the configured providers, and nothing is created; --force cools
it off anyway.

Exit codes: 0 the cool-off is recorded (its end printed); 125 bad input (an
unknown PROVIDER without --force) or backend unreachable.`,
		Example: `  governor backoff anthropic --retry-after 20s
  governor backoff openai`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if retryAfter < 0 || retryAfter > governor.MaxRetryAfter {
				return exitWith(exitcode.Failure, fmt.Errorf("--retry-after %v; allowed: 0 (the default) to %v", retryAfter, governor.MaxRetryAfter))
			}
			if args[0] == "" {
				return exitWith(exitcode.Failure, errors.New(`provider ""; give a provider name such as anthropic`))
			}
			resource := governor.ProviderResource(args[0])
			if err := governor.ValidateResource(resource); err != nil {
				return exitWith(exitcode.Failure, err)
			}
			l, err := a.load()
			if err != nil {
				return err
			}
			g, err := a.open(cmd.Context(), openOptions{Command: "governor backoff " + args[0]})
			if err != nil {
				return err
			}
			defer g.Close()
			if !force {
				if err := knownProvider(cmd.Context(), g, l.Config, args[0]); err != nil {
					return err
				}
			}
			def, _ := l.Catalog().Provider(args[0])
			p := g.Provider(args[0], def.Limits)
			end, err := p.Report(cmd.Context(), governor.RateLimited{RetryAfter: retryAfter, Reason: "governor backoff"})
			if err != nil {
				return exitWith(exitcode.Failure, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "provider %s: %s\n", args[0], humantime.CoolOffNote(end, time.Until(end)))
			return nil
		},
	}
	cmd.Flags().DurationVar(&retryAfter, "retry-after", 0, "how long the provider asked to wait (default: "+governor.DefaultCoolOff.String()+" with jitter)")
	cmd.Flags().BoolVar(&force, "force", false, "cool off PROVIDER even if it is neither configured nor has state")
	return cmd
}

// knownProvider refuses (125) a provider that is neither configured nor
// has state in the backend, naming the configured ones.
func knownProvider(ctx context.Context, g *governor.Governor, c config.Config, name string) error {
	configured := slices.Sorted(maps.Keys(c.Providers))
	if slices.Contains(configured, name) {
		return nil
	}
	have, err := g.Resources(ctx)
	if err != nil {
		return exitWith(exitcode.Failure, err)
	}
	if slices.Contains(have, governor.ProviderResource(name)) {
		return nil
	}
	msg := fmt.Sprintf("provider %q is not configured (providers.NAME) and has no state: nothing cooled off", name)
	switch {
	case len(configured) == 0:
		msg += "; no provider is configured"
	default:
		msg += "; configured: " + strings.Join(configured, ", ")
		if near := nearest.Names(name, configured); len(near) > 0 {
			msg += "; did you mean " + strings.Join(near, " or ") + "?"
		}
	}
	return exitWith(exitcode.Failure, errors.New(msg+"; give --force to cool it off anyway"))
}
