// Package metrics exports governor's state to Prometheus.
//
// A Collector reads every resource and rate key of one project from the
// backend at scrape time and emits const metrics, so a single exporter (`governor
// serve`) covers every process that uses the backend, short-lived CLI
// runs included: the counters are kept by the backend, not by the process
// that acquired. A scrape reads with a bounded timeout and always reports
// governor_up and governor_scrape_error, also when the backend is down.
//
// Instruments hold what only the acquiring process can measure — how long
// it waited — for library users who register them in their own registry.
//
// The package never changes backend state. Package governor does not
// import Prometheus; this package is the only bridge.
//
// # Metrics
//
// Every series of the Collector carries the const label project.
//
//	governor_up                            1 when the backend answered the scrape, else 0
//	governor_scrape_error                  1 when any backend read of the scrape failed
//	governor_scrape_duration_seconds       time the scrape took
//	governor_build_info{version,revision,goversion}  1: which governor serves the page
//	governor_slots_limit{resource}         the limit in force (the configured one before first use)
//	governor_slots_in_use{resource}        weight held by unexpired leases
//	governor_slots_limit_drift{resource}   a differing limit some process asked for; 0 if none
//	governor_holders{resource}             leases held
//	governor_waiters{resource}             acquires queued
//	governor_oldest_lease_age_seconds{resource}   age of the oldest held lease; 0 if none
//	governor_oldest_waiter_age_seconds{resource}  wait so far of the longest-queued acquire; 0 if none
//	governor_acquires_total{resource,outcome}     outcome: acquired, busy (disjoint)
//	governor_acquires_queued_total{resource}      acquires that had to queue
//	governor_acquire_wait_seconds{resource}       histogram: call to grant, every process
//	governor_releases_total{resource}
//	governor_leases_lost_total{resource}
//	governor_reclaims_total{resource,reason}      reason: expired, owner_dead
//	governor_takeovers_total{resource}
//	governor_drift_events_total{resource}         acquires that asked another limit or policy (drift events)
//	governor_rate_allowed_total{provider}         rate reservations granted
//	governor_rate_limited_total{provider}         rate reservations denied
//	governor_rate_remaining{provider,limit}       budget left now; limit: requests, tokens
//	governor_capacity_leases{resource}            live capacity leases (docs/capacity.md); absent when none
//	governor_capacity_slots{resource,of}          their slots, summed; of: wanted, held, in_use
//	governor_capacity_local_grants_total{resource}  slots granted locally from the shares
//	governor_rate_shares{provider}                live rate shares of its requests limit; absent when none
//	governor_rate_share_requests{provider,of}     their requests per the limit's period, summed; of: wanted, held
//	governor_rate_local_grants_total{provider}    requests granted locally from the rate shares
//	governor_rate_token_shares{provider}          live rate shares of its tokens limit; absent when none
//	governor_rate_share_tokens{provider,of}       their tokens per the limit's period, summed; of: wanted, held
//	governor_rate_local_tokens_total{provider}    tokens taken locally from the tokens' shares
//
// The capacity series are per resource, not per process (a fleet's
// processes would each be a series): `governor slots` and the JSON API
// show each process's share. Grants made locally from a share are
// counted in governor_capacity_local_grants_total, apart from
// governor_acquires_total, which counts the grants the backend made (a
// share counts there once, when first held) and keeps its relation to
// the releases and the wait and hold histograms. Each process reports
// its running count of local grants at each refresh and at its release,
// and the backend adds what it had not counted, so a refresh retried or
// late counts nothing twice; the grants of a lease's last interval go
// uncounted if it expired unrefreshed or the backend lost its state.
// Rate shares are counted the same way, on their rate key, in
// governor_rate_local_grants_total, apart from
// governor_rate_allowed_total (the backend's reservations).
//
// The outcomes of governor_acquires_total are disjoint: each acquire that
// ended is counted once, acquired (granted at once, after waiting, or by
// a takeover) or busy (refused in fail mode), so their sum is the number
// of acquires that ended. An acquire that had to queue is counted once
// more, apart, in governor_acquires_queued_total (whether it was then
// granted or gave up).
//
// Counters are never sent lower than a scrape before sent them: a
// resource or rate key that cannot be read in one scrape is left out of
// it (governor_scrape_error says so), rather than summed lower, which
// Prometheus would take for a reset. A resource forgotten after its
// retention (governor.Backend.Forget) leaves the page; used again, its
// series start again from zero, as a new series.
//
// The provider label is a rate key's name after "provider:" (the key a
// governor.Provider uses); a rate key named otherwise keeps its whole
// name. Rate-only providers (rates, no concurrency slots) are included.
//
// governor_acquire_wait_seconds is kept by the backend: each Governor
// sends the waits of its grants (at most a second late, and at Close), so
// it covers CLI runs too. Its buckets are histogram.Bounds.
// Instruments add governor_wait_seconds{resource}, the same measure
// inside one library process, for a process's own registry.
//
// Every resource name becomes a label value: a project with unbounded
// resource names (one per issue, say) makes as many series, bounded by
// the resources used within the retention.
package metrics
