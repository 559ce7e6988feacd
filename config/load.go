package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/viper"

	"github.com/governor-dev/governor/governor/leasetiming"
	"github.com/governor-dev/governor/governor/statedir"
)

// Source says where a value came from.
type Source string

// Sources, from lowest to highest precedence.
const (
	SourceDefault Source = "default"
	SourceFile    Source = "file"
	SourceEnv     Source = "env"
	SourceFlag    Source = "flag"
)

// EnvPrefix starts every environment variable Load reads.
const EnvPrefix = "GOVERNOR_"

// Loaded is a configuration and where its values came from.
type Loaded struct {
	Config Config
	File   string // the config file read (absolute), "" if none
	// Sources maps every dotted key that has a value ("lease.ttl",
	// "providers.anthropic.max_concurrency", …) to where it came from.
	Sources map[string]Source
}

// LoadOptions says where Load looks. The zero value reads the process
// environment and searches the default places for a file.
type LoadOptions struct {
	// File is the --config file; it must exist. "" searches
	// ./exec-defaults.yaml, then $XDG_CONFIG_HOME/governor/exec-defaults.yaml
	// (XDG_CONFIG_HOME defaults to ~/.config), and takes the first that
	// exists, or none.
	File string
	// Env is the environment as KEY=VALUE strings; nil means os.Environ()
	// (an empty, non-nil slice is an empty environment). It also supplies
	// HOME and the XDG_* directories.
	Env []string
	// Flags maps dotted keys ("redis.url", "file.dir", "project",
	// "backend", …) to the values of the flags the user set. Pass only
	// flags that were set: an empty value counts as not set.
	Flags map[string]string
	// Getwd returns the working directory; nil means os.Getwd.
	Getwd func() (string, error)
}

// flagNames spells the CLI's flags in messages; other keys are shown as
// "flag".
var flagNames = map[string]string{
	"redis.url":             "--redis-url",
	"redis.allow_eviction":  "--allow-eviction",
	"redis.loss_quarantine": "--loss-quarantine",
	"file.dir":              "--dir",
	"project":               "--project",
	"backend":               "--backend",
}

// keyDelim separates viper key parts. Provider and resource names may hold
// '.', viper's default; they may not hold NUL (nameProblem).
const keyDelim = "\x00"

// Load reads the configuration from defaults, the file, the environment
// and opts.Flags, in rising precedence, and validates it.
//
// It returns the configuration and where each value came from, or nil and
// an error: a missing --config file (errors.Is fs.ErrNotExist), a file that
// cannot be read, or every problem in the configuration joined, each a
// *FieldError (errors.Is ErrInvalid). It reads files and nothing else.
func Load(opts LoadOptions) (*Loaded, error) {
	envList := opts.Env
	if envList == nil {
		envList = os.Environ()
	}
	env := envMap(envList)
	getwd := opts.Getwd
	if getwd == nil {
		getwd = os.Getwd
	}

	file, err := findFile(opts.File, env, getwd)
	if err != nil {
		return nil, err
	}
	fl := &fileLayer{lines: map[string]int{}, broken: map[string]bool{}}
	if file != "" {
		data, err := ReadTrusted(file, AnyReader)
		if err != nil {
			return nil, err
		}
		fl = parseFile(file, data)
	}
	problems := fl.problems

	names := newNameRegistry(fl.entries)
	envSettings, ps := envLayer(env, names)
	problems = append(problems, ps...)
	flagSettings, ps := flagLayer(opts.Flags, names)
	problems = append(problems, ps...)
	envSettings = append(envSettings, heavyLockDir(env, fl.settings, envSettings, flagSettings)...)

	// file.dir is made absolute in each layer before precedence, since
	// how depends on the layer: from the file's directory for the file's
	// value, else from the working directory.
	layers := [][]*setting{fl.settings, envSettings, flagSettings}
	for i, layer := range layers {
		kept := layer[:0:0]
		for _, s := range layer {
			if key := dotted(s.path); key == "file.dir" || isMkdirLock(s.path) {
				if msg := resolveDir(s, file, env, getwd); msg != "" {
					problems = append(problems, (&origin{file: file, settings: map[string]*setting{key: s}}).errAt(key, s.raw, msg))
					fl.broken[key] = true
					continue
				}
			}
			kept = append(kept, s)
		}
		layers[i] = kept
	}

	v, err := resolve(layers[0], layers[1], layers[2], env)
	if err != nil {
		return nil, err
	}
	var cfg Config
	if err := v.UnmarshalExact(&cfg); err != nil {
		// The schema and the settings' types are checked above, so this
		// is a bug in this package, not in the user's configuration.
		return nil, fmt.Errorf("config: decoding: %w", err)
	}
	cfg.Providers = restore(names, "providers", cfg.Providers)
	cfg.Resources = restore(names, "resources", cfg.Resources)
	cfg.Budgets = restore(names, "budgets", cfg.Budgets)
	cfg.Prices = restore(names, "prices", cfg.Prices)

	// Every key's winner, as viper resolved it, says where its value
	// came from.
	sources := map[string]Source{}
	winners := map[string]*setting{}
	for _, k := range v.AllKeys() {
		if s, ok := v.Get(k).(*setting); ok {
			sources[dotted(s.path)] = s.source
			if s.source != SourceDefault {
				winners[dotted(s.path)] = s
			}
		}
	}
	cfg.origin = &origin{file: file, settings: winners, lines: fl.lines, broken: fl.broken}
	problems = append(problems, cfg.problems()...)
	if err := joinProblems(problems); err != nil {
		return nil, err
	}
	return &Loaded{Config: cfg, File: file, Sources: sources}, nil
}

// resolve layers defaults, the file, the environment and the flags in one
// viper, which alone decides precedence. Each value in it is the *setting
// it came from, so that the value viper resolves for a key also says
// where it came from; the decode hook unwraps them for UnmarshalExact.
//
// Defaults go in with SetDefault, flags with Set (viper's override
// layer), the file's settings with MergeConfigMap (its config layer: the
// YAML was parsed and checked by the walk, which keeps lines). viper reads
// the environment only from the process, and Load takes it as a
// parameter, so the environment is merged over the file in the same layer.
func resolve(file, env, flags []*setting, envMap map[string]string) (*viper.Viper, error) {
	unwrap := func(_, _ reflect.Type, data any) (any, error) {
		if s, ok := data.(*setting); ok {
			return s.value, nil
		}
		return data, nil
	}
	v := viper.NewWithOptions(viper.KeyDelimiter(keyDelim), viper.WithDecodeHook(unwrap))
	def := func(key string, value any) {
		v.SetDefault(strings.ReplaceAll(key, ".", keyDelim), &setting{path: splitKey(key), value: value, raw: fmt.Sprint(value), source: SourceDefault})
	}
	def("project", DefaultProject)
	def("backend", DefaultBackend)
	def("redis.url", "")
	def("redis.allow_eviction", false)
	def("redis.loss_quarantine", true)
	def("file.dir", defaultDir(envMap))
	def("lease.ttl", DefaultLeaseTTL)
	def("lock_order", []string(nil))
	def("run.max_concurrent_runs", DefaultMaxConcurrentRuns)
	if err := v.MergeConfigMap(nest(file)); err != nil {
		return nil, fmt.Errorf("config: merging the file: %w", err)
	}
	if err := v.MergeConfigMap(nest(env)); err != nil {
		return nil, fmt.Errorf("config: merging the environment: %w", err)
	}
	for _, s := range flags {
		v.Set(strings.Join(s.path, keyDelim), s)
	}
	// The heartbeat's default follows the TTL that won (governor's rule).
	heartbeat := DefaultLeaseHeartbeat
	if s, ok := v.Get("lease" + keyDelim + "ttl").(*setting); ok {
		if ttl, ok := s.value.(time.Duration); ok && ttl > 0 {
			heartbeat = leasetiming.HeartbeatFor(ttl)
		}
	}
	def("lease.heartbeat", heartbeat)
	return v, nil
}

// findFile returns the config file to read, absolute, or "" for none.
func findFile(explicit string, env map[string]string, getwd func() (string, error)) (string, error) {
	if explicit != "" {
		path := explicit
		if !filepath.IsAbs(path) {
			wd, err := getwd()
			if err != nil {
				return "", fmt.Errorf("config: cannot resolve config file %s: working directory: %w", explicit, err)
			}
			path = filepath.Join(wd, path)
		}
		if err := checkFile(path); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return "", fmt.Errorf("config: config file %s (from --config): %w", path, unwrapPath(err))
			}
			return "", err
		}
		return path, nil
	}
	wd, err := getwd()
	if err != nil {
		return "", fmt.Errorf("config: cannot look for ./%s: working directory: %w", DefaultFileName, err)
	}
	candidates := []string{filepath.Join(wd, DefaultFileName)}
	if dir := xdgDir(env, "XDG_CONFIG_HOME", ".config"); dir != "" {
		candidates = append(candidates, filepath.Join(dir, "governor", DefaultFileName))
	}
	for _, path := range candidates {
		err := checkFile(path)
		if err == nil {
			return path, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err // a file that is there but unusable is not skipped
		}
	}
	return "", nil
}

func checkFile(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return fmt.Errorf("config: cannot read config file %s: %w", path, unwrapPath(err))
	}
	if fi.IsDir() {
		return fmt.Errorf("config: config file %s is a directory", path)
	}
	return nil
}

// unwrapPath drops the *fs.PathError wrapper, whose message repeats the
// path the caller already names.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// xdgDir returns $VAR if it is absolute (the XDG spec ignores relative
// ones), else $HOME/fallback, else "".
func xdgDir(env map[string]string, name, fallback string) string {
	if dir := env[name]; filepath.IsAbs(dir) {
		return dir
	}
	if home := env["HOME"]; home != "" {
		return filepath.Join(home, fallback)
	}
	return ""
}

func defaultDir(env map[string]string) string {
	if dir := xdgDir(env, "XDG_STATE_HOME", filepath.Join(".local", "state")); dir != "" {
		return statedir.Under(dir)
	}
	return ""
}

// resolveDir makes a file.dir setting absolute: "~/" is $HOME; a relative
// path is taken from the config file's directory for a value from the file
// (so that every process finds the same state), else from the working
// directory.
func resolveDir(s *setting, file string, env map[string]string, getwd func() (string, error)) string {
	dir := s.value.(string)
	if dir == "~" || strings.HasPrefix(dir, "~/") {
		home := env["HOME"]
		if home == "" {
			return fmt.Sprintf("%q starts with ~ but $HOME is not set; write an absolute path", dir)
		}
		dir = filepath.Join(home, dir[1:])
	}
	if !filepath.IsAbs(dir) {
		base := filepath.Dir(file)
		if s.source != SourceFile {
			wd, err := getwd()
			if err != nil {
				return fmt.Sprintf("%q is relative and the working directory is unknown (%v); write an absolute path", dir, err)
			}
			base = wd
		}
		dir = filepath.Join(base, dir)
	}
	s.value = filepath.Clean(dir)
	return ""
}

func envMap(list []string) map[string]string {
	env := make(map[string]string, len(list))
	for _, kv := range list {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v // a later duplicate wins, as in os/exec
		}
	}
	return env
}

// isMkdirLock reports whether path is resources.<name>.mkdir_lock: a
// directory, resolved as file.dir is.
func isMkdirLock(path []string) bool {
	return len(path) == 3 && path[0] == "resources" && path[2] == "mkdir_lock"
}

// heavyLockDir returns, when $HEAVY_LOCK_DIR is set, a setting of the
// environment's layer for each resources.<name>.mkdir_lock that a layer
// sets: the wrapper's variable moves the slot of governor too. When no
// layer sets one, it binds HeavyResource (implicitHeavyLock).
func heavyLockDir(env map[string]string, layers ...[]*setting) []*setting {
	dir := env[EnvHeavyLockDir]
	if dir == "" {
		return nil
	}
	var out []*setting
	seen := map[string]bool{}
	for _, layer := range layers {
		for _, s := range layer {
			if key := dotted(s.path); isMkdirLock(s.path) && !seen[key] {
				seen[key] = true
				out = append(out, &setting{path: s.path, value: dir, raw: dir, source: SourceEnv, origin: "env " + EnvHeavyLockDir})
			}
		}
	}
	if len(out) == 0 {
		return implicitHeavyLock(dir, layers...)
	}
	return out
}

// envLayer returns the settings of the GOVERNOR_ variables that name a key;
// the others (GOVERNOR_SESSION, …) are runtime state and are skipped.
func envLayer(env map[string]string, names *nameRegistry) ([]*setting, []*FieldError) {
	fixed := map[string][]string{EnvPrefix + "DIR": {"file", "dir"}}
	for _, path := range leafKeys(root, nil) {
		if !slices.Contains(path, "<name>") {
			fixed[EnvPrefix+strings.ToUpper(strings.Join(path, "_"))] = path
		}
	}
	var settings []*setting
	var problems []*FieldError
	for _, name := range sortedKeys(env) {
		raw := env[name]
		if !strings.HasPrefix(name, EnvPrefix) || raw == "" {
			continue
		}
		if name == EnvPrefix+"FILE_DIR" && env[EnvPrefix+"DIR"] != "" {
			continue // GOVERNOR_DIR, the documented spelling, wins
		}
		origin := "env " + name
		path := fixed[name]
		if path == nil {
			var msg string
			path, msg = names.fromEnv(name)
			if msg != "" {
				problems = append(problems, &FieldError{Origin: origin, Value: RedactURL(raw), Msg: msg})
				continue
			}
		}
		if path == nil {
			continue
		}
		value, msg := convert(lookup(path).kind, raw)
		if msg != "" {
			problems = append(problems, &FieldError{Origin: origin, Key: dotted(path), Value: RedactURL(raw), Msg: msg})
			continue
		}
		settings = append(settings, &setting{path: path, value: value, raw: raw, source: SourceEnv, origin: origin})
	}
	return settings, problems
}

// flagLayer returns the settings of opts.Flags.
func flagLayer(flags map[string]string, names *nameRegistry) ([]*setting, []*FieldError) {
	var settings []*setting
	var problems []*FieldError
	for _, key := range sortedKeys(flags) {
		raw := flags[key]
		origin := "flag"
		if n := flagNames[key]; n != "" {
			origin += " " + n
		}
		path := splitKey(key)
		s := lookup(path)
		if s == nil || s.kind == kindSection || s.kind == kindNamed {
			var known []string
			for _, k := range leafKeys(root, nil) {
				known = append(known, dotted(k))
			}
			problems = append(problems, &FieldError{Origin: origin, Key: key, Value: RedactURL(raw),
				Msg: "not a configuration key; keys are " + strings.Join(known, ", ")})
			continue
		}
		if raw == "" {
			continue
		}
		if len(path) == 3 {
			if msg := nameProblem(path[1], resourceName(path[0], path[1])); msg != "" {
				problems = append(problems, &FieldError{Origin: origin, Key: path[0], Value: path[1], Msg: msg})
				continue
			}
			path[1] = names.spell(path[0], path[1])
		}
		value, msg := convert(s.kind, raw)
		if msg != "" {
			problems = append(problems, &FieldError{Origin: origin, Key: key, Value: RedactURL(raw), Msg: msg})
			continue
		}
		settings = append(settings, &setting{path: path, value: value, raw: raw, source: SourceFlag, origin: origin})
	}
	return settings, problems
}

// convert parses a value from the environment or a flag.
func convert(k kind, raw string) (any, string) {
	switch k {
	case kindInt:
		n, err := strconv.Atoi(strings.TrimSpace(raw))
		if err != nil {
			return nil, fmt.Sprintf("%s is not a whole number", quote(raw))
		}
		return n, ""
	case kindDuration:
		d, msg := parseDuration(raw)
		return d, msg
	case kindBool:
		b, err := strconv.ParseBool(strings.TrimSpace(raw))
		if err != nil {
			return nil, fmt.Sprintf("%s is not true or false", quote(raw))
		}
		return b, ""
	case kindAmount:
		return parseAmount(raw)
	case kindList:
		items := strings.Split(raw, ",")
		for i := range items {
			items[i] = strings.TrimSpace(items[i])
		}
		return items, ""
	}
	return raw, ""
}

// nest turns settings into the nested map viper merges, the settings
// themselves as leaves (see resolve).
func nest(settings []*setting) map[string]any {
	m := map[string]any{}
	for _, s := range settings {
		cur := m
		for _, seg := range s.path[:len(s.path)-1] {
			next, ok := cur[seg].(map[string]any)
			if !ok {
				next = map[string]any{}
				cur[seg] = next
			}
			cur = next
		}
		cur[s.path[len(s.path)-1]] = s
	}
	return m
}

// nameRegistry keeps the spelling of provider and resource names: viper
// folds keys to lower case, and a resource name must come out as written.
type nameRegistry struct {
	spelling map[string]map[string]string // section -> lower-case name -> name
	declared map[string][]string          // section -> names declared in the file
}

func newNameRegistry(entries [][]string) *nameRegistry {
	r := &nameRegistry{spelling: map[string]map[string]string{}, declared: map[string][]string{}}
	for _, e := range entries {
		r.spell(e[0], e[1])
		r.declared[e[0]] = append(r.declared[e[0]], e[1])
	}
	return r
}

// spell registers name in section and returns its spelling: the first one
// seen that equals it up to case.
func (r *nameRegistry) spell(section, name string) string {
	m := r.spelling[section]
	if m == nil {
		m = map[string]string{}
		r.spelling[section] = m
	}
	lower := strings.ToLower(name)
	if s, ok := m[lower]; ok {
		return s
	}
	m[lower] = name
	return name
}

// restore re-keys a map viper decoded, by the names' spelling, and adds
// the entries declared with no values ("anthropic:" alone).
func restore[V any](r *nameRegistry, section string, m map[string]V) map[string]V {
	out := make(map[string]V, len(m))
	for k, v := range m {
		if s, ok := r.spelling[section][k]; ok {
			k = s
		}
		out[k] = v
	}
	for _, name := range r.declared[section] {
		if _, ok := out[name]; !ok {
			var zero V
			out[name] = zero
		}
	}
	return out
}

// fromEnv maps GOVERNOR_PROVIDERS_<NAME>_<FIELD> and
// GOVERNOR_RESOURCES_<NAME>_<FIELD> to a path, or returns nil if name is
// not of that form.
func (r *nameRegistry) fromEnv(name string) ([]string, string) {
	for _, section := range []string{"providers", "resources", "budgets", "prices"} {
		rest, ok := strings.CutPrefix(name, EnvPrefix+strings.ToUpper(section)+"_")
		if !ok {
			continue
		}
		for _, field := range sortedKeys(root.fields[section].entry.fields) {
			mid, ok := strings.CutSuffix(rest, "_"+strings.ToUpper(field))
			if !ok || mid == "" {
				continue
			}
			var matches []string
			for _, n := range r.declared[section] {
				if envForm(n) == mid {
					matches = append(matches, n)
				}
			}
			switch len(matches) {
			case 0:
				return []string{section, r.spell(section, strings.ToLower(mid)), field}, ""
			case 1:
				return []string{section, matches[0], field}, ""
			default:
				return nil, fmt.Sprintf("matches %s %s; set the value in the file instead", section, strings.Join(matches, " and "))
			}
		}
	}
	return nil, ""
}

// envForm is how a name appears in an environment variable.
func envForm(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z':
			return r - 'a' + 'A'
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_':
			return r
		}
		return '_'
	}, name)
}
