// Package metrics exports governor's state to Prometheus.
//
// A Collector reads every resource of one project from the backend at
// scrape time and emits const metrics, so a single exporter (`governor
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
//	governor_slots_limit{resource}         the limit in force (the configured one before first use)
//	governor_slots_in_use{resource}        weight held by unexpired leases
//	governor_slots_limit_drift{resource}   a differing limit some process asked for; 0 if none
//	governor_holders{resource}             leases held
//	governor_waiters{resource}             acquires queued
//	governor_oldest_lease_age_seconds{resource}   age of the oldest held lease; 0 if none
//	governor_oldest_waiter_age_seconds{resource}  wait so far of the longest-queued acquire; 0 if none
//	governor_acquires_total{resource,outcome}     outcome: acquired, busy, waited
//	governor_releases_total{resource}
//	governor_leases_lost_total{resource}
//	governor_reclaims_total{resource,reason}      reason: expired, owner_dead
//	governor_takeovers_total{resource}            0 until the backend counts takeovers
//	governor_rate_limited_total                   0 until the backend counts rate-limit denials
//
// Instruments add governor_wait_seconds{resource}, a histogram of the time
// from an acquire call to its grant, in the process that waited.
//
// Every resource name becomes a label value: a project with unbounded
// resource names (one per issue, say) makes as many series.
package metrics
