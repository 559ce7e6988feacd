package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/leasetiming"
	"github.com/governor-dev/governor/governor/lockorder"
	"github.com/governor-dev/governor/governor/naming"
	"github.com/governor-dev/governor/internal/redact"
)

// origin records where Load found each value.
type origin struct {
	file     string
	settings map[string]*setting // dotted key -> the setting that won
	lines    map[string]int      // from the file; see fileLayer.lines
	broken   map[string]bool     // keys whose value could not be read; already reported
}

// errAt returns a problem with key located where its value came from. For
// a key no source set, it points at the nearest enclosing entry in the
// file (resources.heavy for a missing resources.heavy.limit).
func (o *origin) errAt(key, value, msg string) *FieldError {
	e := &FieldError{Key: key, Value: RedactURL(value), Msg: msg}
	if o == nil {
		return e
	}
	base, _, _ := strings.Cut(key, "[") // lock_order[2] -> lock_order
	if s := o.settings[base]; s != nil {
		switch s.source {
		case SourceFile:
			e.File, e.Line = o.file, s.line
			if l, ok := o.lines[key]; ok {
				e.Line = l
			}
		case SourceEnv, SourceFlag:
			e.Origin = s.origin
		}
		return e
	}
	for k := key; k != ""; {
		if l, ok := o.lines[k]; ok {
			e.File, e.Line = o.file, l
			break
		}
		i := strings.LastIndexByte(k, '.')
		if i < 0 {
			break
		}
		k = k[:i]
	}
	return e
}

func (o *origin) isBroken(keys ...string) bool {
	if o == nil {
		return false
	}
	for _, k := range keys {
		if o.broken[k] {
			return true
		}
	}
	return false
}

// missing tells whether Load found no value for key; false for a
// hand-built Config, where a zero value may be meant.
func (o *origin) missing(key string) bool {
	return o != nil && o.settings[key] == nil
}

// Validate reports every problem with c, joined with errors.Join; each is a
// *FieldError naming the key, the bad value and what is allowed, and, for a
// Config from Load, the file line, variable or flag it came from. It
// returns nil for a valid Config and changes nothing.
func (c Config) Validate() error {
	return joinProblems(c.problems())
}

// leaseNames spell the lease timing in governor's messages.
var leaseNames = leasetiming.Names{TTL: "lease.ttl", Heartbeat: "lease.heartbeat", SafetyMargin: "the safety margin"}

// The rules config states in its messages; governor decides them.
var (
	limitRule = fmt.Sprintf("a limit must be a whole number from 1 to %d", governor.MaxLimit)
	nameRule  = fmt.Sprintf("names must be printable, without whitespace or any of { } * ? [ ] \\ (Redis key and pattern characters), in Unicode NFC without Latin, Greek and Cyrillic letters mixed (look-alikes), and at most %d bytes with the resource prefix", naming.MaxNameLen)
)

func (c Config) problems() []*FieldError {
	o := c.origin
	var ps []*FieldError
	add := func(key, value, format string, args ...any) {
		ps = append(ps, o.errAt(key, value, fmt.Sprintf(format, args...)))
	}

	var ne *naming.Error
	if !o.isBroken("project") && errors.As(governor.ValidateProject(c.Project), &ne) {
		if ne.Reason == naming.Dots {
			add("project", c.Project, "%s is not a valid project name; it must not be \".\" or \"..\"", quote(c.Project))
		} else {
			add("project", c.Project, "%s is not a valid project name; use 1 to %d letters, digits, '.', '_' or '-'", quote(c.Project), naming.MaxProject)
		}
	}

	switch c.Backend {
	case BackendAuto, BackendFile:
	case BackendRedis:
		if c.Redis.URL == "" && !o.isBroken("redis.url") {
			add("backend", c.Backend, "%q needs a Redis URL; set redis.url, GOVERNOR_REDIS_URL or --redis-url", c.Backend)
		}
	default:
		if !o.isBroken("backend") {
			add("backend", c.Backend, "%s is not a backend; use one of auto, file, redis", quote(c.Backend))
		}
	}

	if c.Redis.URL != "" {
		if msg := redisURLProblem(c.Redis.URL); msg != "" {
			add("redis.url", RedactURL(c.Redis.URL), "%s", msg)
		}
	}

	switch {
	case o.isBroken("file.dir"):
	case c.File.Dir == "":
		if c.ResolvedBackend() == BackendFile {
			add("file.dir", "", "no state directory: set file.dir, GOVERNOR_DIR or --dir (the default needs $XDG_STATE_HOME or $HOME)")
		}
	case !filepath.IsAbs(c.File.Dir):
		add("file.dir", c.File.Dir, "%q is not an absolute path", c.File.Dir)
	}

	if !o.isBroken("lease.ttl") || !o.isBroken("lease.heartbeat") {
		// governor decides; the safety margin is the one governor.New
		// derives from the TTL, as Timing leaves it unset.
		t := leasetiming.Timing{TTL: c.Lease.TTL, Heartbeat: c.Lease.Heartbeat,
			SafetyMargin: leasetiming.SafetyMarginFor(c.Lease.TTL)}
		if o.isBroken("lease.ttl") {
			// Already reported: check the heartbeat's own range only.
			t.TTL, t.SafetyMargin = leasetiming.MaxTTL, 0
		}
		if o.isBroken("lease.heartbeat") {
			t.Heartbeat = leasetiming.HeartbeatFor(t.TTL)
		}
		var te *leasetiming.Error
		if err := t.Check(leaseNames); errors.As(err, &te) {
			add(te.Field, te.Value.String(), "%s", te.Msg)
		}
	}

	checkLimit := func(key string, v int, missing bool) {
		switch {
		case o.isBroken(key):
		case missing:
			add(key, "", "missing; %s", limitRule)
		case governor.ValidateLimit(key, v) != nil:
			add(key, strconv.Itoa(v), "%d is not allowed; %s", v, limitRule)
		}
	}
	if p := c.Run.MaxConcurrentRuns; p != nil {
		checkLimit("run.max_concurrent_runs", *p, false)
	}

	defined := map[string]string{} // resource -> key that defines it
	defined[RunResource] = "run.max_concurrent_runs"
	defined[RunJoinResource] = "run.max_concurrent_runs"
	for _, name := range sortedKeys(c.Providers) {
		p := c.Providers[name]
		if msg := nameProblem(name, resourceName("providers", name)); msg != "" {
			add("providers", name, "%s", msg)
			continue
		}
		prefix := "providers." + name + "."
		if p.MaxConcurrency != nil {
			checkLimit(prefix+"max_concurrency", *p.MaxConcurrency, false)
			defined[ProviderResourcePrefix+name] = prefix + "max_concurrency"
		}
		for _, r := range []struct {
			field string
			v     int
		}{{"requests_per_minute", p.RequestsPerMinute}, {"tokens_per_minute", p.TokensPerMinute}, {"burst", p.Burst}} {
			if r.v < 0 && !o.isBroken(prefix+r.field) {
				add(prefix+r.field, strconv.Itoa(r.v), "%d is not allowed; a rate must be 0 (no limit) or more", r.v)
			}
		}
		if p.Adaptive && !o.isBroken(prefix+"max_concurrency", prefix+"adaptive_min", prefix+"adaptive_increase_every") {
			max := 0
			if p.MaxConcurrency != nil {
				max = *p.MaxConcurrency
			}
			if _, err := p.ProviderLimits().Adaptive.Request(max); err != nil {
				add(prefix+"adaptive", "true", "%s", strings.TrimPrefix(err.Error(), governor.ErrInvalid.Error()+": "))
			}
		} else if !p.Adaptive && (p.AdaptiveMin != 0 || p.AdaptiveIncreaseEvery != 0) {
			add(prefix+"adaptive", "false", "adaptive_min or adaptive_increase_every is set but providers.%s.adaptive is not true", name)
		}
		if _, err := governor.ParseBackendDown(p.OnBackendDown); err != nil && !o.isBroken(prefix+"on_backend_down") {
			add(prefix+"on_backend_down", p.OnBackendDown, "%s", strings.TrimPrefix(err.Error(), governor.ErrInvalid.Error()+": "))
		}
		switch q, err := p.QueuePolicy(); {
		case err != nil:
			add("providers."+name, name, "%v", err)
		case q.IsZero():
		case p.MaxConcurrency == nil:
			add("providers."+name, name, "a queue policy needs providers.%s.max_concurrency: without it provider:%s has no slots to queue for", name, name)
		default:
			if err := q.Validate(ProviderResourcePrefix+name, *p.MaxConcurrency); err != nil {
				add("providers."+name, name, "%s", strings.TrimPrefix(err.Error(), governor.ErrInvalid.Error()+": "))
			}
		}
		if p.Burst > 0 && p.RequestsPerMinute <= 0 && p.TokensPerMinute <= 0 {
			add(prefix+"burst", strconv.Itoa(p.Burst), "%d is set but providers.%s has no requests_per_minute or tokens_per_minute for it to apply to", p.Burst, name)
		}
	}
	mkdirBound := "" // the resource bound to the mkdir slot
	for _, name := range sortedKeys(c.Resources) {
		if msg := nameProblem(name, name); msg != "" {
			add("resources", name, "%s", msg)
			continue
		}
		key := "resources." + name + ".limit"
		checkLimit(key, c.Resources[name].Limit, o.missing(key))
		if dir := c.Resources[name].MkdirLock; dir != "" {
			lk := "resources." + name + ".mkdir_lock"
			switch {
			case o.isBroken(lk):
			case !filepath.IsAbs(dir):
				add(lk, dir, "%q is not an absolute path", dir)
			case mkdirBound != "":
				add(lk, dir, "%q: only one resource may be bound to a mkdir slot (%s and %s are one variable each), and %s already is; remove one", dir, EnvHeavyLockDir, EnvHeavyLockHeld, mkdirBound)
			}
			if l := c.Resources[name].Limit; l != 1 && !o.isBroken(key) && !o.missing(key) {
				add(key, strconv.Itoa(l), "%d is not allowed with mkdir_lock: the mkdir slot is one slot; use limit 1", l)
			}
			if mkdirBound == "" {
				mkdirBound = "resources." + name
			}
		}
		if other, dup := defined[name]; dup {
			add("resources."+name, name, "resource %q is already defined by %s; define it once", name, other)
		}
		if p, err := c.Resources[name].QueuePolicy(); err != nil {
			add("resources."+name, name, "%v", err)
		} else if err := p.Validate(name, c.Resources[name].Limit); err != nil {
			add("resources."+name, name, "%s", strings.TrimPrefix(err.Error(), governor.ErrInvalid.Error()+": "))
		}
	}

	ps = append(ps, c.budgetProblems()...)
	ps = append(ps, c.capacityProblems()...)

	if !o.isBroken("lock_order") {
		if err, ok := lockorder.Validate(c.LockOrder).(interface{ Unwrap() []error }); ok {
			for _, e := range err.Unwrap() {
				var le *lockorder.Error
				if !errors.As(e, &le) {
					continue
				}
				key := fmt.Sprintf("lock_order[%d]", le.Index)
				switch {
				case le.First >= 0:
					add(key, le.Entry, "%q is listed twice (also lock_order[%d]); each prefix must appear once", le.Entry, le.First)
				case le.Entry == "":
					add(key, "", "an entry is empty; entries are resource-name prefixes such as issue")
				default:
					add(key, le.Entry, "%s", nameProblem(le.Entry, le.Entry))
				}
			}
		}
	}
	return ps
}

// nameProblem returns what is wrong with a provider or resource name
// (resource is the full resource name it defines), or "". governor
// decides; this says it in the configuration's words.
func nameProblem(name, resource string) string {
	if name == "" {
		return "an empty name is not allowed; " + nameRule
	}
	var ne *naming.Error
	if !errors.As(governor.ValidateResource(resource), &ne) {
		return ""
	}
	var what string
	switch ne.Reason {
	case naming.TooLong:
		return fmt.Sprintf("name %q makes resource name %q of %d bytes; %s", name, resource, len(resource), nameRule)
	case naming.NotUTF8:
		return fmt.Sprintf("name %q is not valid UTF-8; %s", name, nameRule)
	case naming.Space:
		what = "whitespace"
	case naming.Unprintable:
		what = fmt.Sprintf("the unprintable character %U", ne.Char)
	case naming.NotNFC:
		// resource is a prefix (ASCII, as "provider:") and name.
		return fmt.Sprintf("name %s is not in Unicode normal form C; write %q, which looks the same; %s",
			strconv.QuoteToASCII(name), strings.TrimPrefix(ne.Want, strings.TrimSuffix(resource, name)), nameRule)
	case naming.MixedScript:
		return fmt.Sprintf("name %s mixes Latin, Greek or Cyrillic letters (%q, %U), which look alike; %s", strconv.QuoteToASCII(name), ne.Char, ne.Char, nameRule)
	default:
		what = fmt.Sprintf("%q", ne.Char)
	}
	return fmt.Sprintf("name %q contains %s; %s", name, what, nameRule)
}

// redisURLProblem returns what is wrong with a Redis URL, or "". Messages
// show the URL redacted.
func redisURLProblem(raw string) string {
	shown := quote(raw)
	u, err := url.Parse(raw)
	if err != nil {
		// The parser's own message can quote the password (a URL whose '@'
		// is missing puts it in the port), so it is not repeated.
		return fmt.Sprintf("%s is not a valid URL; %s", shown, redisURLForms)
	}
	switch u.Scheme {
	case "redis", "rediss", "redis+cluster", "rediss+cluster", "redis+sentinel", "rediss+sentinel":
		if u.Opaque != "" || u.Hostname() == "" {
			return fmt.Sprintf("%s has no host; %s", shown, redisURLForms)
		}
		if p := u.Port(); p != "" {
			if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
				return fmt.Sprintf("%s has port %q; a port is a number from 1 to 65535", shown, p)
			}
		}
		for _, a := range u.Query()["addr"] {
			if msg := addrProblem(shown, a); msg != "" {
				return msg
			}
		}
		if db := strings.Trim(u.Path, "/"); db != "" {
			if strings.HasSuffix(u.Scheme, "+cluster") {
				return fmt.Sprintf("%s has database %q; a Redis Cluster has database 0 only: leave the path out", shown, db)
			}
			if msg := dbProblem(shown, db); msg != "" {
				return msg
			}
		}
		if strings.HasSuffix(u.Scheme, "+sentinel") && u.Query().Get("master_name") == "" {
			return fmt.Sprintf("%s names no master; a sentinel URL needs ?master_name=NAME, the name the sentinels monitor", shown)
		}
	case "unix":
		if u.Host != "" {
			return fmt.Sprintf("%s has host %q; a unix URL names the socket by absolute path, with three slashes: unix:///path/to/socket", shown, u.Host)
		}
		if u.Path == "" || u.Path == "/" {
			return fmt.Sprintf("%s has no socket path; use unix:///path/to/socket", shown)
		}
	case "":
		return fmt.Sprintf("%s has no scheme; %s", shown, redisURLForms)
	default:
		return fmt.Sprintf("%s has scheme %q; %s", shown, u.Scheme, redisURLForms)
	}
	if db := u.Query().Get("db"); db != "" {
		return dbProblem(shown, db)
	}
	return ""
}

// redisURLForms lists the Redis URLs governor takes.
const redisURLForms = "use redis://[user:password@]host[:port][/db], rediss://… for TLS, " +
	"redis+cluster://host:port[?addr=host:port…] for a Redis Cluster, " +
	"redis+sentinel://host:port[/db]?master_name=NAME[&addr=host:port…] for Sentinel, or unix:///path/to/socket"

// addrProblem checks one more seed address (?addr=host:port).
func addrProblem(shown, a string) string {
	host, port, err := net.SplitHostPort(a)
	if err != nil || host == "" {
		return fmt.Sprintf("%s has addr %q; an addr is host:port", shown, a)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Sprintf("%s has addr %q; a port is a number from 1 to 65535", shown, a)
	}
	return ""
}

func dbProblem(shown, db string) string {
	if n, err := strconv.Atoi(db); err != nil || n < 0 || strings.Contains(db, "+") {
		return fmt.Sprintf("%s has database %q; the database must be a number such as 0 (redis://host:6379/0)", shown, db)
	}
	return ""
}

// quote shows a value in a message: quoted, any URL password redacted.
func quote(v string) string { return strconv.Quote(RedactURL(v)) }

// RedactURL returns raw with its secrets replaced by "***": the password
// of its user:password part ("redis://u:***@host") and the values of
// secret query parameters ("?password=***", as Sentinel URLs take it). It
// works on malformed URLs too, so that error messages never print a
// password. redact.URL decides; this is its name in package config.
func RedactURL(raw string) string { return redact.URL(raw) }
