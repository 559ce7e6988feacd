package config_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/governor-dev/governor/config"
)

const (
	limitRule = "a limit must be a whole number from 1 to 1000000"
	nameRule  = `names must be printable, without whitespace or any of { } * ? [ ] \ (Redis key and pattern characters), in Unicode NFC without Latin, Greek and Cyrillic letters mixed (look-alikes), and at most 200 bytes with the resource prefix`
	urlForms  = "use redis://[user:password@]host[:port][/db], rediss://… for TLS, redis+cluster://host:port[?addr=host:port…] for a Redis Cluster, redis+sentinel://host:port[/db]?master_name=NAME[&addr=host:port…] for Sentinel, or unix:///path/to/socket"
	topKeys   = "allowed at the top level: backend, budgets, file, lease, lock_order, prices, project, providers, redis, resources, run"
)

// Every problem in a file, reported with its line; F is the file's path.
func TestLoadFileErrors(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string
	}{
		{"syntax: bad indentation", "project: a\nlease:\n  ttl: 30s\n heartbeat: 10s\n",
			[]string{"F:4: YAML syntax error: did not find expected key"}},
		{"syntax: key indented deeper", "project: p\nresources:\n  heavy: {limit: 1}\n   gpu: {limit: 2}\n",
			[]string{"F:4: YAML syntax error: did not find expected key"}},
		{"syntax: key back out to no block's depth", "project: p\nresources:\n  heavy:\n     limit: 1\n    mkdir_lock: /tmp/x\n",
			[]string{"F:5: YAML syntax error: did not find expected key"}},
		{"syntax: unclosed flow list", "project: a\nlock_order: [a, b\nbackend: auto\n",
			[]string{"F:2: YAML syntax error: did not find expected ',' or ']'"}},
		{"syntax: on line 1", "project: a: b\n",
			[]string{"F:1: YAML syntax error: mapping values are not allowed in this context"}},
		{"syntax: tab", "lease:\n\tttl: 3s\n",
			[]string{"F:2: YAML syntax error: found character that cannot start any token"}},
		{"syntax: control character", "project: a\nbackend: \x01\n",
			[]string{"F:2: YAML syntax error: control characters are not allowed"}},
		{"syntax: unknown alias", "project: a\nbackend: *b\n",
			[]string{"F:2: YAML syntax error: unknown anchor 'b' referenced"}},
		{"two documents", "project: a\n---\nproject: b\n",
			[]string{"F:2: the file holds more than one YAML document (a second '---'); put everything in one"}},
		{"empty file", "", nil},
		{"comments only", "# nothing yet\n", nil},
		{"document markers", "---\nproject: a\n---\n", nil},
		{"top level not a mapping", "- a\n- b\n",
			[]string{"F:1: the top level must be a mapping (key: value lines), not a list; " + topKeys}},

		{"unknown top-level key", "project: a\nbakend: redis\n",
			[]string{"F:2: bakend: unknown key; did you mean backend? (" + topKeys + ")"}},
		{"unknown key found elsewhere", "ttl: 30s\n",
			[]string{"F:1: ttl: unknown key; did you mean lease.ttl? (" + topKeys + ")"}},
		{"unknown key, no suggestion", "colour: blue\n",
			[]string{"F:1: colour: unknown key (" + topKeys + ")"}},
		{"unknown under redis", "redis:\n  uri: redis://h\n",
			[]string{"F:2: redis.uri: unknown key; did you mean redis.url? (allowed under redis: allow_eviction, loss_quarantine, url)"}},
		{"unknown under file", "file:\n  directory: /x\n",
			[]string{"F:2: file.directory: unknown key (allowed under file: dir)"}},
		{"unknown under lease", "lease:\n  ttl: 30s\n  heartbeats: 10s\n",
			[]string{"F:3: lease.heartbeats: unknown key; did you mean lease.heartbeat? (allowed under lease: heartbeat, ttl)"}},
		{"unknown under run", "run:\n  max_concurrent_run: 2\n",
			[]string{"F:2: run.max_concurrent_run: unknown key; did you mean run.max_concurrent_runs? (allowed under run: max_concurrent_runs)"}},
		{"unknown under a provider", "providers:\n  anthropic:\n    max_concurency: 2\n",
			[]string{"F:3: providers.anthropic.max_concurency: unknown key; did you mean providers.anthropic.max_concurrency? (allowed under providers.anthropic: adaptive, adaptive_increase_every, adaptive_min, burst, cap, capacity, capacity_lease, capacity_refresh, fair, fair_cap, fair_weights, max_concurrency, max_overtakes, max_queue, max_wait, on_backend_down, policy, priorities, requests_per_minute, reserve, shadow, tokens_per_minute)"}},
		{"unknown under a resource", "resources:\n  heavy:\n    limit: 1\n    limt: 2\n",
			[]string{"F:4: resources.heavy.limt: unknown key; did you mean resources.heavy.limit? (allowed under resources.heavy: cap, capacity, capacity_lease, capacity_refresh, fair, fair_cap, fair_weights, limit, max_overtakes, max_queue, max_wait, mkdir_lock, policy, priorities, reserve)"}},
		{"key defined twice", "project: a\nproject: b\n",
			[]string{"F:2: project: defined twice (first at line 1)"}},
		{"names differing only in case", "resources:\n  GPU: {limit: 1}\n  gpu: {limit: 2}\n",
			[]string{`F:3: resources.gpu: "gpu" and "GPU" (line 2) differ only in case; names in resources must differ in more than case`}},
		{"merge key", "base: &b {ttl: 5s}\nlease:\n  <<: *b\n",
			[]string{"F:1: base: unknown key (" + topKeys + ")", "F:3: lease: YAML merge keys (<<) are not supported; write the keys out"}},
		{"section not a mapping", "redis: redis://h:6379\n",
			[]string{`F:1: redis: must be a mapping (key: value lines), not the value "redis://h:6379"; allowed under redis: allow_eviction, loss_quarantine, url`}},
		{"section password not shown", "redis: redis://u:hunter2@h:6379\n",
			[]string{`F:1: redis: must be a mapping (key: value lines), not the value "redis://u:***@h:6379"; allowed under redis: allow_eviction, loss_quarantine, url`}},
		{"value not a scalar", "project: [a, b]\n",
			[]string{"F:1: project: must be a single value, not a list"}},
		{"lock_order entry not a scalar", "lock_order:\n  - a\n  - {b: 1}\n",
			[]string{"F:3: lock_order[1]: must be a single value, not a mapping"}},
		{"aliases resolve", "resources:\n  heavy: &one {limit: 1}\n  lifecycle: *one\n", nil},
		{"a bad aliased value points where it is written", "resources:\n  heavy: &zero {limit: 0}\n  lifecycle: *zero\n",
			[]string{"F:2: resources.heavy.limit: 0 is not allowed; " + limitRule, "F:2: resources.lifecycle.limit: 0 is not allowed; " + limitRule}},
		{"lock_order not a list", "lock_order: issue\n",
			[]string{`F:1: lock_order: must be a list such as [issue, plan], not the value "issue"`}},

		{"run limit zero", "run:\n  max_concurrent_runs: 0\n",
			[]string{"F:2: run.max_concurrent_runs: 0 is not allowed; " + limitRule}},
		{"run limit negative", "run: {max_concurrent_runs: -3}\n",
			[]string{"F:1: run.max_concurrent_runs: -3 is not allowed; " + limitRule}},
		{"run limit too large", "run:\n  max_concurrent_runs: 1000001\n",
			[]string{"F:2: run.max_concurrent_runs: 1000001 is not allowed; " + limitRule}},
		{"run limit not a number", "run:\n  max_concurrent_runs: four\n",
			[]string{`F:2: run.max_concurrent_runs: "four" is not a whole number`}},
		{"bool not a bool", "redis:\n  allow_eviction: sometimes\n",
			[]string{`F:2: redis.allow_eviction: "sometimes" is not true or false`}},
		{"run limit fractional", "run:\n  max_concurrent_runs: 2.5\n",
			[]string{`F:2: run.max_concurrent_runs: 2.5 is not a whole number`}},
		{"provider limit zero", "providers:\n  anthropic:\n    max_concurrency: 0\n",
			[]string{"F:3: providers.anthropic.max_concurrency: 0 is not allowed; " + limitRule}},
		{"provider limit too large", "providers:\n  anthropic:\n    max_concurrency: 5000000\n",
			[]string{"F:3: providers.anthropic.max_concurrency: 5000000 is not allowed; " + limitRule}},
		{"negative rates", "providers:\n  openai:\n    requests_per_minute: -1\n    tokens_per_minute: -2\n    burst: -3\n",
			[]string{
				"F:3: providers.openai.requests_per_minute: -1 is not allowed; a rate must be 0 (no limit) or more",
				"F:4: providers.openai.tokens_per_minute: -2 is not allowed; a rate must be 0 (no limit) or more",
				"F:5: providers.openai.burst: -3 is not allowed; a rate must be 0 (no limit) or more",
			}},
		{"burst without a rate", "providers:\n  openai:\n    max_concurrency: 1\n    burst: 5\n",
			[]string{"F:4: providers.openai.burst: 5 is set but providers.openai has no requests_per_minute or tokens_per_minute for it to apply to"}},
		{"resource limit zero", "resources:\n  heavy: {limit: 0}\n",
			[]string{"F:2: resources.heavy.limit: 0 is not allowed; " + limitRule}},
		{"resource limit missing", "resources:\n  heavy:\n  light: {}\n",
			[]string{"F:2: resources.heavy.limit: missing; " + limitRule, "F:3: resources.light.limit: missing; " + limitRule}},
		{"resource defined twice", "run: {max_concurrent_runs: 2}\nproviders:\n  x: {max_concurrency: 1}\nresources:\n  run: {limit: 1}\n  provider:x: {limit: 1}\n",
			[]string{
				`F:5: resources.run: resource "run" is already defined by run.max_concurrent_runs; define it once`,
				`F:6: resources.provider:x: resource "provider:x" is already defined by providers.x.max_concurrency; define it once`,
			}},

		{"ttl zero", "lease:\n  ttl: 0s\n",
			[]string{"F:2: lease.ttl: 0s is not allowed; the TTL must be longer than 0, such as 30s"}},
		{"ttl negative", "lease:\n  ttl: -5s\n  heartbeat: 1s\n",
			[]string{"F:2: lease.ttl: -5s is not allowed; the TTL must be longer than 0, such as 30s"}},
		{"ttl not a duration", "lease:\n  ttl: 30 seconds\n",
			[]string{`F:2: lease.ttl: "30 seconds" is not a duration; write a number with a unit, such as 30s, 1m30s or 500ms`}},
		{"ttl without unit", "lease:\n  ttl: 30\n",
			[]string{"F:2: lease.ttl: 30 has no unit; write a duration such as 30s"}},
		{"heartbeat equal to ttl", "lease:\n  ttl: 30s\n  heartbeat: 30s\n",
			[]string{"F:3: lease.heartbeat: 30s is not shorter than lease.ttl 30s; a holder must renew well before its lease expires, so use a heartbeat of about a third of the TTL (10s)"}},
		{"heartbeat longer than ttl", "lease:\n  ttl: 10s\n  heartbeat: 1m\n",
			[]string{"F:3: lease.heartbeat: 1m0s is not shorter than lease.ttl 10s; a holder must renew well before its lease expires, so use a heartbeat of about a third of the TTL (3.333333333s)"}},
		{"heartbeat zero", "lease:\n  heartbeat: 0s\n",
			[]string{"F:2: lease.heartbeat: 0s is not allowed; the heartbeat must be longer than 0 and shorter than lease.ttl, such as 10s"}},
		{"bad ttl does not also fail the heartbeat check", "lease:\n  ttl: soon\n  heartbeat: 40s\n",
			[]string{`F:2: lease.ttl: "soon" is not a duration; write a number with a unit, such as 30s, 1m30s or 500ms`}},

		{"backend unknown", "backend: mysql\n",
			[]string{`F:1: backend: "mysql" is not a backend; use one of auto, file, redis`}},
		{"backend redis without url", "backend: redis\n",
			[]string{`F:1: backend: "redis" needs a Redis URL; set redis.url, GOVERNOR_REDIS_URL or --redis-url`}},

		{"project with space", "project: my project\n",
			[]string{`F:1: project: "my project" is not a valid project name; use 1 to 64 letters, digits, '.', '_' or '-'`}},
		{"project too long", "project: " + strings.Repeat("p", 65) + "\n",
			[]string{`F:1: project: "` + strings.Repeat("p", 65) + `" is not a valid project name; use 1 to 64 letters, digits, '.', '_' or '-'`}},
		{"project dot-dot", "project: ..\n",
			[]string{`F:1: project: ".." is not a valid project name; it must not be "." or ".."`}},

		{"provider name with space", "providers:\n  \"open ai\": {max_concurrency: 1}\n",
			[]string{`F:2: providers: name "open ai" contains whitespace; ` + nameRule}},
		{"resource name with brace", "resources:\n  \"{heavy}\": {limit: 1}\n",
			[]string{`F:2: resources: name "{heavy}" contains '{'; ` + nameRule}},
		{"resource name unprintable", "resources:\n  \"a\\u200bb\": {limit: 1}\n",
			[]string{`F:2: resources: name "a\u200bb" contains the unprintable character U+200B; ` + nameRule}},
		{"provider name too long", "providers:\n  " + strings.Repeat("n", 192) + ": {max_concurrency: 1}\n",
			[]string{`F:2: providers: name "` + strings.Repeat("n", 192) + `" makes resource name "provider:` + strings.Repeat("n", 192) + `" of 201 bytes; ` + nameRule}},
		{"resource name empty", "resources:\n  \"\": {limit: 1}\n",
			[]string{`F:2: resources: an empty name is not allowed; ` + nameRule}},

		{"lock_order empty and duplicate entries", "lock_order:\n  - issue\n  - \"\"\n  - plan\n  - issue\n",
			[]string{
				"F:3: lock_order[1]: an entry is empty; entries are resource-name prefixes such as issue",
				`F:5: lock_order[3]: "issue" is listed twice (also lock_order[0]); each prefix must appear once`,
			}},

		{"several problems in line order", "run: {max_concurrent_runs: 0}\nbackend: nope\nlease: {ttl: 1s, heartbeat: 2s}\n",
			[]string{
				"F:1: run.max_concurrent_runs: 0 is not allowed; " + limitRule,
				`F:2: backend: "nope" is not a backend; use one of auto, file, redis`,
				"F:3: lease.heartbeat: 2s is not shorter than lease.ttl 1s; a holder must renew well before its lease expires, so use a heartbeat of about a third of the TTL (333.333333ms)",
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			_, file, err := e.loadFile(tt.yaml)
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, config.ErrInvalid) {
				t.Errorf("errors.Is(err, ErrInvalid) = false")
			}
			if got := errLines(err, file); !slices.Equal(got, tt.want) {
				t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestLoadRedisURL(t *testing.T) {
	tests := []struct {
		url  string
		want string // "" = valid
	}{
		{"redis://127.0.0.1:6379/0", ""},
		{"redis://h", ""},
		{"rediss://user:pw@h:6380/15", ""},
		{"redis://:pw@[::1]:6379", ""},
		{"unix:///run/redis.sock?db=2", ""},
		{"unix://u:pw@/run/redis.sock", ""},
		{"redis+cluster://h1:7000?addr=h2:7001&addr=h3:7002", ""},
		{"rediss+cluster://u:pw@h1:7000", ""},
		{"redis+sentinel://h:26379/2?master_name=main&addr=h2:26379", ""},
		{"redis+cluster://h1:7000/1", `"redis+cluster://h1:7000/1" has database "1"; a Redis Cluster has database 0 only: leave the path out`},
		{"redis+cluster://h1:7000?addr=h2", `"redis+cluster://h1:7000?addr=h2" has addr "h2"; an addr is host:port`},
		{"redis+cluster://h1:7000?addr=h2:0", `"redis+cluster://h1:7000?addr=h2:0" has addr "h2:0"; a port is a number from 1 to 65535`},
		{"redis+sentinel://h:26379", `"redis+sentinel://h:26379" names no master; a sentinel URL needs ?master_name=NAME, the name the sentinels monitor`},
		{"redis+sentinel://bob:hunter2@h:26379", `"redis+sentinel://bob:***@h:26379" names no master; a sentinel URL needs ?master_name=NAME, the name the sentinels monitor`},
		{"http://h:6379", `"http://h:6379" has scheme "http"; ` + urlForms},
		{"127.0.0.1:6379", `"127.0.0.1:6379" is not a valid URL; ` + urlForms},
		{"localhost", `"localhost" has no scheme; ` + urlForms},
		{"redis:///0", `"redis:///0" has no host; ` + urlForms},
		{"redis://:6379/0", `"redis://:6379/0" has no host; ` + urlForms},
		{"redis://h:99999", `"redis://h:99999" has port "99999"; a port is a number from 1 to 65535`},
		{"redis://h:6379/zero", `"redis://h:6379/zero" has database "zero"; the database must be a number such as 0 (redis://host:6379/0)`},
		{"redis://h:6379/0/1", `"redis://h:6379/0/1" has database "0/1"; the database must be a number such as 0 (redis://host:6379/0)`},
		{"redis://h:6379/-1", `"redis://h:6379/-1" has database "-1"; the database must be a number such as 0 (redis://host:6379/0)`},
		{"redis://h?db=x", `"redis://h?db=x" has database "x"; the database must be a number such as 0 (redis://host:6379/0)`},
		{"unix://tmp/redis.sock", `"unix://tmp/redis.sock" has host "tmp"; a unix URL names the socket by absolute path, with three slashes: unix:///path/to/socket`},
		{"unix://", `"unix://" has no socket path; use unix:///path/to/socket`},
		// passwords never shown, even in URLs that do not parse
		{"redis://bob:hunter2@h:port/0", `"redis://bob:***@h:port/0" is not a valid URL; ` + urlForms},
		{"redis://bob:hunter2@h/zero", `"redis://bob:***@h/zero" has database "zero"; the database must be a number such as 0 (redis://host:6379/0)`},
		{"http://bob:hunter2@h", `"http://bob:***@h" has scheme "http"; ` + urlForms},
		{"redis://bob:hun/ter2@h:x", `"redis://bob:***@h:x" is not a valid URL; ` + urlForms},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			e := newEnv(t)
			for _, via := range []struct {
				opts   config.LoadOptions
				prefix string
			}{
				{config.LoadOptions{Env: []string{"GOVERNOR_REDIS_URL=" + tt.url}}, "env GOVERNOR_REDIS_URL: redis.url: "},
				{config.LoadOptions{Flags: map[string]string{"redis.url": tt.url}}, "flag --redis-url: redis.url: "},
			} {
				_, err := e.load(via.opts)
				switch {
				case tt.want == "" && err != nil:
					t.Errorf("unexpected error: %v", err)
				case tt.want != "" && (err == nil || err.Error() != via.prefix+tt.want):
					t.Errorf("err = %v\nwant  %s", err, via.prefix+tt.want)
				}
				if err != nil && strings.Contains(err.Error(), "hunter2") {
					t.Errorf("password printed: %v", err)
				}
			}
		})
	}
	t.Run("from the file", func(t *testing.T) {
		e := newEnv(t)
		_, file, err := e.loadFile("redis:\n  url: redis://bob:hunter2@h/zero\n")
		want := `F:2: redis.url: "redis://bob:***@h/zero" has database "zero"; the database must be a number such as 0 (redis://host:6379/0)`
		if got := errLines(err, file); !slices.Equal(got, []string{want}) {
			t.Errorf("got %q\nwant %q", got, want)
		}
	})
}

// Values from the environment and flags are named by variable and flag.
func TestLoadEnvAndFlagErrors(t *testing.T) {
	tests := []struct {
		name  string
		env   []string
		flags map[string]string
		want  []string
	}{
		{"duration from env", []string{"GOVERNOR_LEASE_TTL=30 seconds"}, nil,
			[]string{`env GOVERNOR_LEASE_TTL: lease.ttl: "30 seconds" is not a duration; write a number with a unit, such as 30s, 1m30s or 500ms`}},
		{"heartbeat from env not shorter than ttl", []string{"GOVERNOR_LEASE_HEARTBEAT=45s"}, nil,
			[]string{"env GOVERNOR_LEASE_HEARTBEAT: lease.heartbeat: 45s is not shorter than lease.ttl 30s; a holder must renew well before its lease expires, so use a heartbeat of about a third of the TTL (10s)"}},
		{"limit from env", []string{"GOVERNOR_RUN_MAX_CONCURRENT_RUNS=0"}, nil,
			[]string{"env GOVERNOR_RUN_MAX_CONCURRENT_RUNS: run.max_concurrent_runs: 0 is not allowed; " + limitRule}},
		{"not a number from env", []string{"GOVERNOR_RESOURCES_HEAVY_LIMIT=one"}, nil,
			[]string{`env GOVERNOR_RESOURCES_HEAVY_LIMIT: resources.heavy.limit: "one" is not a whole number`}},
		{"not a bool from env", []string{"GOVERNOR_REDIS_LOSS_QUARANTINE=off"}, nil,
			[]string{`env GOVERNOR_REDIS_LOSS_QUARANTINE: redis.loss_quarantine: "off" is not true or false`}},
		{"backend from flag", nil, map[string]string{"backend": "etcd"},
			[]string{`flag --backend: backend: "etcd" is not a backend; use one of auto, file, redis`}},
		{"project from flag", nil, map[string]string{"project": "a/b"},
			[]string{`flag --project: project: "a/b" is not a valid project name; use 1 to 64 letters, digits, '.', '_' or '-'`}},
		{"unknown flag key", nil, map[string]string{"lease.tll": "5s"},
			[]string{"flag: lease.tll: not a configuration key; keys are backend, budgets.<name>.calendar, budgets.<name>.fair_keys, budgets.<name>.limit, budgets.<name>.models, budgets.<name>.per, budgets.<name>.providers, budgets.<name>.sessions, budgets.<name>.soft, budgets.<name>.tz, budgets.<name>.unit, file.dir, lease.heartbeat, lease.ttl, lock_order, prices.<name>.cached_input, prices.<name>.input, prices.<name>.output, prices.<name>.per_call, project, providers.<name>.adaptive, providers.<name>.adaptive_increase_every, providers.<name>.adaptive_min, providers.<name>.burst, providers.<name>.cap, providers.<name>.capacity, providers.<name>.capacity_lease, providers.<name>.capacity_refresh, providers.<name>.fair, providers.<name>.fair_cap, providers.<name>.fair_weights, providers.<name>.max_concurrency, providers.<name>.max_overtakes, providers.<name>.max_queue, providers.<name>.max_wait, providers.<name>.on_backend_down, providers.<name>.policy, providers.<name>.priorities, providers.<name>.requests_per_minute, providers.<name>.reserve, providers.<name>.shadow, providers.<name>.tokens_per_minute, redis.allow_eviction, redis.loss_quarantine, redis.url, resources.<name>.cap, resources.<name>.capacity, resources.<name>.capacity_lease, resources.<name>.capacity_refresh, resources.<name>.fair, resources.<name>.fair_cap, resources.<name>.fair_weights, resources.<name>.limit, resources.<name>.max_overtakes, resources.<name>.max_queue, resources.<name>.max_wait, resources.<name>.mkdir_lock, resources.<name>.policy, resources.<name>.priorities, resources.<name>.reserve, run.max_concurrent_runs"}},
		{"bad name from flag", nil, map[string]string{"providers.a b.max_concurrency": "1"},
			[]string{`flag: providers: name "a b" contains whitespace; ` + nameRule}},
		{"unknown field from flag", nil, map[string]string{"providers.a.limit": "1"},
			[]string{"flag: providers.a.limit: not a configuration key; keys are backend, budgets.<name>.calendar, budgets.<name>.fair_keys, budgets.<name>.limit, budgets.<name>.models, budgets.<name>.per, budgets.<name>.providers, budgets.<name>.sessions, budgets.<name>.soft, budgets.<name>.tz, budgets.<name>.unit, file.dir, lease.heartbeat, lease.ttl, lock_order, prices.<name>.cached_input, prices.<name>.input, prices.<name>.output, prices.<name>.per_call, project, providers.<name>.adaptive, providers.<name>.adaptive_increase_every, providers.<name>.adaptive_min, providers.<name>.burst, providers.<name>.cap, providers.<name>.capacity, providers.<name>.capacity_lease, providers.<name>.capacity_refresh, providers.<name>.fair, providers.<name>.fair_cap, providers.<name>.fair_weights, providers.<name>.max_concurrency, providers.<name>.max_overtakes, providers.<name>.max_queue, providers.<name>.max_wait, providers.<name>.on_backend_down, providers.<name>.policy, providers.<name>.priorities, providers.<name>.requests_per_minute, providers.<name>.reserve, providers.<name>.shadow, providers.<name>.tokens_per_minute, redis.allow_eviction, redis.loss_quarantine, redis.url, resources.<name>.cap, resources.<name>.capacity, resources.<name>.capacity_lease, resources.<name>.capacity_refresh, resources.<name>.fair, resources.<name>.fair_cap, resources.<name>.fair_weights, resources.<name>.limit, resources.<name>.max_overtakes, resources.<name>.max_queue, resources.<name>.max_wait, resources.<name>.mkdir_lock, resources.<name>.policy, resources.<name>.priorities, resources.<name>.reserve, run.max_concurrent_runs"}},
		{"lock_order from flag", nil, map[string]string{"lock_order": "a,,a"},
			[]string{
				"flag: lock_order[1]: an entry is empty; entries are resource-name prefixes such as issue",
				`flag: lock_order[2]: "a" is listed twice (also lock_order[0]); each prefix must appear once`,
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := newEnv(t).load(config.LoadOptions{Env: tt.env, Flags: tt.flags})
			if got := errLines(err, ""); !slices.Equal(got, tt.want) {
				t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestFieldError(t *testing.T) {
	_, file, err := newEnv(t).loadFile("lease:\n  ttl: 30s\n  tll: 5s\n")
	var fe *config.FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("errors.As(%v, *FieldError) = false", err)
	}
	if fe.File != file || fe.Line != 3 || fe.Key != "lease.tll" {
		t.Errorf("FieldError %+v", fe)
	}
}

// A hand-built Config has no file to point at: messages start at the key.
func TestValidateHandBuilt(t *testing.T) {
	valid := config.Config{
		Project: "p", Backend: "auto", File: config.File{Dir: "/state"},
		Lease: config.Lease{TTL: 30 * time.Second, Heartbeat: 10 * time.Second},
	}
	if err := valid.Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	bad := valid
	bad.Project = ""
	bad.File.Dir = "rel"
	bad.Lease.Heartbeat = time.Minute
	bad.Run.MaxConcurrentRuns = intp(0)
	bad.Providers = map[string]config.Provider{"p": {MaxConcurrency: intp(-1)}, "q": {}}
	bad.Resources = map[string]config.Resource{"r": {}}
	want := []string{
		`project: "" is not a valid project name; use 1 to 64 letters, digits, '.', '_' or '-'`,
		`file.dir: "rel" is not an absolute path`,
		"lease.heartbeat: 1m0s is not shorter than lease.ttl 30s; a holder must renew well before its lease expires, so use a heartbeat of about a third of the TTL (10s)",
		"run.max_concurrent_runs: 0 is not allowed; " + limitRule,
		"providers.p.max_concurrency: -1 is not allowed; " + limitRule,
		"resources.r.limit: 0 is not allowed; " + limitRule,
	}
	if got := errLines(bad.Validate(), ""); !slices.Equal(got, want) {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A Sentinel URL's password, given as ?password=, is never printed: not
// by config show, not in an error about the URL (redact.URL decides what
// is hidden; its table is in package redact).
func TestSentinelPasswordRedacted(t *testing.T) {
	e := newEnv(t, "GOVERNOR_REDIS_URL=redis+sentinel://h:26379?master_name=m&password=hunter2")
	l, err := e.load(config.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range l.Show() {
		if strings.Contains(en.Value, "hunter2") {
			t.Errorf("config show %s = %q", en.Key, en.Value)
		}
	}
	for _, bad := range []string{
		"redis+sentinel://h:26379?password=hunter2",                 // no master_name
		"redis+sentinel://h:26379/x?master_name=m&password=hunter2", // a bad db
		"redis+sentinel://h:bad?master_name=m&password=hunter2",     // a bad port
	} {
		_, err := e.load(config.LoadOptions{Flags: map[string]string{"redis.url": bad}})
		if err == nil {
			t.Errorf("%s: no error", bad)
			continue
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("error prints the password: %v", err)
		}
	}
}

func TestSuggestions(t *testing.T) {
	tests := []struct{ yaml, want string }{
		{"porject: a\n", "did you mean project?"},
		{"lease:\n  TTL: 5s\n", "did you mean lease.ttl?"},
		{"lease:\n  url: redis://h\n", "did you mean redis.url?"},
		{"providers:\n  a:\n    tokens_per_min: 5\n", "did you mean providers.a.tokens_per_minute?"},
		{"providers:\n  a:\n    requests_per_minuet: 5\n", "did you mean providers.a.requests_per_minute?"},
		{"lock-order: [a]\n", "did you mean lock_order?"},
		{"max_concurrent_runs: 2\n", "did you mean run.max_concurrent_runs?"},
		{"base: 1\n", ""},
	}
	for _, tt := range tests {
		_, _, err := newEnv(t).loadFile(tt.yaml)
		if err == nil {
			t.Errorf("%q: no error", tt.yaml)
			continue
		}
		got := err.Error()
		if tt.want == "" && strings.Contains(got, "did you mean") || !strings.Contains(got, tt.want) {
			t.Errorf("%q: %v, want %q", tt.yaml, got, tt.want)
		}
	}
}

func TestLoadEnvAmbiguousName(t *testing.T) {
	e := newEnv(t)
	e.write(config.DefaultFileName, "providers:\n  claude-3: {max_concurrency: 1}\n  claude_3: {max_concurrency: 1}\n")
	_, err := e.load(config.LoadOptions{Env: []string{"GOVERNOR_PROVIDERS_CLAUDE_3_MAX_CONCURRENCY=2"}})
	want := "env GOVERNOR_PROVIDERS_CLAUDE_3_MAX_CONCURRENCY: matches providers claude-3 and claude_3; set the value in the file instead"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant  %s", err, want)
	}
}

// A bad value in the file is reported even when the environment overrides it.
func TestLoadBadFileValueUnderEnv(t *testing.T) {
	e := newEnv(t)
	file := e.write(config.DefaultFileName, "lease:\n  ttl: 30 seconds\n")
	_, err := e.load(config.LoadOptions{Env: []string{"GOVERNOR_LEASE_TTL=30s"}})
	want := []string{`F:2: lease.ttl: "30 seconds" is not a duration; write a number with a unit, such as 30s, 1m30s or 500ms`}
	if got := errLines(err, file); !slices.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}
