//go:build !governor_noserve

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/governor-dev/governor/config"
	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/exitcode"
	"github.com/governor-dev/governor/internal/statuspage"
	"github.com/governor-dev/governor/metrics"
)

// DefaultListen is where `governor serve` listens without --listen.
const DefaultListen = "127.0.0.1:9464"

func (a *app) serveCmd() *cobra.Command {
	var (
		listen    string
		timeout   time.Duration
		retention time.Duration
		page      bool
		tokenFile string
		unix      string
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve a status page, a JSON API, /metrics and /healthz for the whole project",
		Example: `  governor serve                          # http://127.0.0.1:9464/
  governor serve --listen 0.0.0.0:9464 --admin-token-file ~/.governor-token
  governor serve --unix ~/.governor.sock`,
		Long: `serve exposes the project's slots over HTTP:

  /          a status page that updates itself every second: each resource's
             limit, use, paused state, holders and waiters (session, host,
             pid, command, since, last heartbeat, token, expected wait), and
             the events of the last 24 hours; it says when the backend does
             not answer. It loads nothing from other sites.
  /api/v1/slots    what 'governor slots --json' prints (?resource=R, repeatable)
  /api/v1/events   what 'governor events --json' prints (?resource=R, ?since=1h)
  /api/v1/info     {"project", "version", "actions", "poll_seconds"}
  /api/v1/history  what serve's own reads of the backend (every second) saw of
             each resource over the last hour, in 10 s steps (use, limit,
             waiters, cool-off), and its wait-time distribution: the page's
             charts (?resource=R, repeatable)
  /metrics   the project's state, read from the backend at scrape time, plus
             this process's go_* and process_* metrics
  /healthz   200 "ok" when the backend answers within --timeout, else 503

A read that fails answers {"error": "..."}: 404 for an unknown resource, 400
for a bad parameter, 503 when the backend does not answer within --timeout.
--page=false serves /metrics and /healthz alone.

Actions. With --admin-token-file FILE, the page and the API also act:
pause and resume a resource, set its limit live (0: back to the configured
limit), cancel a waiter. FILE holds one token of at least 16 printable
characters and must be readable by its owner alone (chmod 600), like any
credential governor reads. Each action is a POST of a JSON body to
/api/v1/pause, /api/v1/resume ({"resource"}), /api/v1/limit ({"resource",
"limit"}) or /api/v1/cancel ({"resource", "waiter": ID} or {"resource",
"session": S}), and is done only when, in this order:
  1. it is not a cross-origin browser request: a Sec-Fetch-Site header other
     than same-origin or none, or an Origin header whose host is not the one
     the request was sent to, is refused with 403 (so another site open in
     the same browser cannot act through it);
  2. it carries the token in the header "Authorization: Bearer TOKEN" (401
     without it or with a wrong one; a header, never a cookie, so that the
     browser never adds it by itself);
  3. its Content-Type is application/json (415) and its body names a valid
     resource and nothing meant for another action (400).
It answers {"action", "resource", "by"} ("cancelled": the waiter ids, for a
cancel), and the backend records the action as an event naming who did it:
"serve admin from ADDRESS:PORT" (the client's address). Without
--admin-token-file, the page and the API only read: the action URLs do not
exist (404) and the page shows no controls.

On a loopback address, every path (the page, the API, /metrics, /healthz)
answers only requests for the host localhost or a loopback IP (the Host
header): another site cannot read them by pointing a name of its own at
127.0.0.1 (DNS rebinding). A proxy in front must then send such a Host.

Loopback still means every user of this machine: on a host with other
accounts serve warns so once at start. --unix PATH listens on a unix socket
instead, created 0600 (only you, and root, can connect: curl --unix-socket
PATH http://localhost/); PATH must not exist, or be a socket of yours that
nothing listens on any more (a killed serve's), which is replaced; serve
removes it when it stops. See docs/operator.md.

A client gets 5 s to send its request's headers (at most 16 KiB, else 431)
and 10 s for the whole request; an idle keep-alive connection is closed
after a minute. A resource named twice in ?resource= is shown once.

Values are read from the backend at scrape time, and the counters are kept by
the backend, not by the process that acquired: one serve covers every process
of the project on every machine sharing the backend, including CLI runs that
have already finished. Resources in the configuration are reported before
first use, with their configured limit.

Metrics (all with the label project): governor_up, governor_scrape_error,
governor_scrape_duration_seconds, governor_build_info{version,revision,goversion};
governor_slots_limit, governor_slots_in_use, governor_slots_limit_drift,
governor_holders, governor_waiters, governor_oldest_lease_age_seconds,
governor_oldest_waiter_age_seconds, governor_paused,
governor_expected_wait_seconds (a newcomer's; absent when unknown) (gauges by
resource);
governor_acquires_total{outcome=acquired|busy} (disjoint: their sum is the
acquires that ended), governor_acquires_queued_total, governor_releases_total,
governor_leases_lost_total, governor_reclaims_total{reason=expired|owner_dead},
governor_takeovers_total, governor_drift_events_total (acquires that asked for
another limit or queue policy than the one in force, one per new disagreement,
as the backend records them in its events) (counters by resource);
governor_acquire_wait_seconds and governor_hold_seconds (histograms by
resource: how long acquires waited, and leases were held until released, in
every process, CLI runs included); governor_rate_allowed_total,
governor_rate_limited_total, governor_shadow_denied_total (counters by provider),
governor_rate_remaining{provider,limit=requests|tokens} (gauge);
governor_cooloff_seconds (seconds left of a cool-off after a rate-limit signal),
governor_last_signal_timestamp_seconds, and for adaptive providers
governor_adaptive_limit and governor_adaptive_limit_max (gauges by resource);
for resources with capacity leases (docs/capacity.md), governor_capacity_leases
and governor_capacity_slots{of=wanted|held|in_use} (gauges by resource) and
governor_capacity_local_grants_total (slots granted locally from the shares,
not in governor_acquires_total: counter by resource); for providers with rate
shares, governor_rate_shares and governor_rate_share_requests{of=wanted|held}
(gauges by provider) and governor_rate_local_grants_total (requests granted
locally from the shares, not in governor_rate_allowed_total: counter by
provider), and for its tokens' shares governor_rate_token_shares,
governor_rate_share_tokens{of=wanted|held} and
governor_rate_local_tokens_total. When the
backend does not answer within --timeout a scrape still succeeds, with
governor_up 0; a series that could not be read is left out of that scrape,
never sent lower than before. Scrapes that arrive while the page is being
collected share that collection, so at most one is in flight.

Resources are forgotten once idle: a resource with no holder and no waiter,
on which nothing was granted or queued for --resources-retention (1h at the
least: forgetting erases the resource's events, admin actions included, and
any user of the backend can run serve), loses its state (limit, counters,
events, histograms) and leaves the listing, so that a
project with a resource per issue or per file does not make every scrape read
every resource it ever used. Used again, it starts afresh; its fencing tokens
still only increase, and sequences (seq next) are never forgotten. serve does
the forgetting, so without a running serve nothing is forgotten.

A Grafana dashboard for these metrics ships as metrics/dashboard.json.

What the endpoints disclose, to anyone who can connect (reads have no
authentication): the project's name; its resources' and providers' names,
limits, use, holder and waiter counts, ages, wait times, counters and
remaining rate budgets; governor's version and revision and serve's own process
metrics (memory, open files, start time, Go version); and in /healthz, why the
backend failed (with a Redis URL's password redacted). The page and /api/v1/
also show what 'governor slots' and 'governor events' show to users of the
backend: sessions, hosts, pids, commands (with secrets redacted), lease ids
(public; never a lease's secret) and tokens. /metrics and /healthz alone
(--page=false) do not show sessions, hosts, pids, commands or lease ids.
serve listens on loopback by default and warns on stderr when --listen
reaches beyond it (0.0.0.0, ::, a LAN address): then firewall the port, or put
an authenticating proxy in front. serve speaks plain HTTP, without TLS: with
--admin-token-file beyond loopback it warns that the token crosses the
network readable; reach it through an SSH tunnel or a TLS-terminating proxy.

A Redis backend that is down when serve starts is not an error: serve says so,
reports governor_up 0, and connects at the first scrape that finds Redis up.

serve stops gracefully on INT or TERM. Exit codes: 0 stopped by a signal;
125 bad flags, bad configuration, an --admin-token-file that cannot be read or
is readable by others, a file backend that cannot open, or cannot listen.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if timeout <= 0 {
				return exitWith(exitcode.Failure, fmt.Errorf("--timeout %v; it must be positive", timeout))
			}
			if err := statuspage.ValidateRetention(retention); err != nil {
				return exitWith(exitcode.Failure, fmt.Errorf("--resources-retention: %w", err))
			}
			if unix != "" && cmd.Flags().Changed("listen") {
				return exitWith(exitcode.Failure, fmt.Errorf("--unix %s and --listen %s: give one of them", unix, listen))
			}
			var token string
			if tokenFile != "" {
				if !page {
					return exitWith(exitcode.Failure, errors.New("--admin-token-file acts through the status page and its API: it cannot go with --page=false"))
				}
				var err error
				if token, err = config.ReadTokenFile(tokenFile); err != nil {
					return exitWith(exitcode.Failure, fmt.Errorf("--admin-token-file: %w", err))
				}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			l, err := a.load()
			if err != nil {
				return err
			}
			src := statuspage.NewReopening(l.Config.Project, func(ctx context.Context) (*governor.Governor, error) {
				return a.open(ctx, openOptions{})
			})
			defer src.Close()
			err = statuspage.Serve(ctx, statuspage.Options{Listen: listen, Unix: unix, Timeout: timeout, Retention: retention,
				Page: page, Token: token, Limits: l.Config.Limits(), Locks: l.Config.MkdirLocks(), Budgets: budgetConfigs(l.Config, nil), Version: version(),
				Source: src, Redis: l.Config.ResolvedBackend() == config.BackendRedis, Stderr: cmd.ErrOrStderr()})
			if err != nil {
				var ee *exitcode.Error
				if errors.As(err, &ee) {
					return err // the backend's opening said its code
				}
				return exitWith(exitcode.Failure, err)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", DefaultListen, "address to listen on, HOST:PORT (port 0: any free port)")
	f.StringVar(&unix, "unix", "", "listen on a unix socket at PATH instead, that only you can connect to (0600); see above")
	f.DurationVar(&timeout, "timeout", metrics.DefaultTimeout, "bound on the backend reads of one scrape or health check")
	f.DurationVar(&retention, "resources-retention", governor.DefaultRetention,
		fmt.Sprintf("forget a resource idle (no holder, waiter, grant or enqueue) this long (at least %v)", statuspage.MinRetention))
	f.BoolVar(&page, "page", true, "serve the status page (/) and the JSON API (/api/v1/); false: /metrics and /healthz alone")
	f.StringVar(&tokenFile, "admin-token-file", "", "enable actions (pause, resume, limit, cancel) on the page and the API for requests carrying the token in FILE (chmod 600); see above for the CSRF rule")
	return cmd
}
