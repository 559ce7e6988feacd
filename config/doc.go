// Package config turns exec-defaults.yaml, the environment (GOVERNOR_*) and
// command-line flags into a plain [Config] struct.
//
// # Where values come from
//
// [Load] layers four sources; a later one wins key by key:
//
//  1. defaults (see the Default… constants);
//  2. the file: LoadOptions.File (--config) if given, which must exist;
//     otherwise the first of ./exec-defaults.yaml and
//     $XDG_CONFIG_HOME/governor/exec-defaults.yaml (XDG_CONFIG_HOME defaults
//     to ~/.config) that exists; no file at all is fine. A file is read
//     only if it is owned by the user or root and not writable by group or
//     others, as ssh does ([ReadTrusted]): in a shared directory another
//     user's file would otherwise switch the backend, project and limits;
//  3. the environment: GOVERNOR_ followed by the dotted key in upper case
//     with '.' replaced by '_' (GOVERNOR_LEASE_TTL, GOVERNOR_REDIS_URL,
//     GOVERNOR_RUN_MAX_CONCURRENT_RUNS, GOVERNOR_PROVIDERS_ANTHROPIC_BURST,
//     GOVERNOR_RESOURCES_HEAVY_LIMIT, GOVERNOR_LOCK_ORDER=issue,plan), plus
//     GOVERNOR_DIR for file.dir (it wins over GOVERNOR_FILE_DIR);
//  4. flags, passed as LoadOptions.Flags keyed by dotted key.
//
// An empty value means "not set" in every layer. GOVERNOR_ variables that
// name no key (GOVERNOR_SESSION, GOVERNOR_HELD, GOVERNOR_TOKEN,
// GOVERNOR_REQUIRE_REDIS, …) are runtime state, not configuration, and are
// ignored. In a provider or resource variable the name is matched against
// the names in the file with letters upper-cased and every character other
// than A-Z, 0-9 and '_' replaced by '_'; a name not in the file is taken in
// lower case (GOVERNOR_PROVIDERS_OPENAI_MAX_CONCURRENCY adds provider
// "openai"). Names are otherwise case-sensitive, but two names in one
// section may not differ only in case.
//
// A relative file.dir is resolved against the directory of the file that
// set it, or the working directory when it came from the environment or a
// flag; a leading "~/" means $HOME.
//
// # The file
//
//	project: prj-0001          # namespace, [A-Za-z0-9._-]{1,64}; default "default"
//	backend: auto              # auto | file | redis; auto = redis when a Redis URL is set
//	redis:
//	  url: redis://127.0.0.1:6379/0   # rediss:// for TLS, unix:///path/to/socket?db=0,
//	                           # redis+cluster://h1:7000?addr=h2:7000 for a Cluster,
//	                           # redis+sentinel://h1:26379?master_name=main for Sentinel
//	file:
//	  dir: ""                  # default $XDG_STATE_HOME/governor, else ~/.local/state/governor
//	lease:
//	  ttl: 30s                 # 100ms to 24h
//	  heartbeat: 10s           # default min(10s, ttl/3); must be shorter than ttl minus ttl/5
//	                           # (leasetiming.Timing decides, as for governor.New)
//	run:
//	  max_concurrent_runs: 4   # default 4: the run lock "run" (1) + join slots "run:join" (3)
//	providers:
//	  anthropic:
//	    max_concurrency: 2     # resource "provider:anthropic", 2 slots
//	    requests_per_minute: 50
//	    tokens_per_minute: 40000
//	    burst: 10
//	resources:
//	  heavy: {limit: 1}        # mkdir_lock: DIR binds it to with-heavy-lock's DIR/slot.d
//	                           # (limit 1; $HEAVY_LOCK_DIR overrides DIR; one such resource)
//	lock_order: [issue, plan, file, workspace]
//
// A provider without max_concurrency has no concurrency resource: only its
// rates (requests_per_minute, tokens_per_minute, burst; 0 or absent = no
// limit) apply. Slot limits are whole numbers from 1 to [MaxLimit]. Names,
// limits, the lock order and the lease timing are checked by package
// governor's rules, so that what `config check` accepts governor.New takes.
//
// # Errors
//
// Every problem is a [*FieldError] naming where the bad value came from
// (file and line, environment variable, flag), the dotted key, the value and
// what is allowed; [Load] and [Config.Validate] report all of them at once
// with errors.Join. Passwords in Redis URLs are never printed ([RedactURL]).
package config
