package config_test

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/governor-dev/governor/config"
)

// resources.<name>.mkdir_lock binds a resource to the wrapper's slot:
// relative paths are from the file's directory, $HEAVY_LOCK_DIR overrides
// it (and says so as its source), a flag still wins.
func TestMkdirLock(t *testing.T) {
	e := newEnv(t)
	l, file, err := e.loadFile("resources:\n  heavy: {limit: 1, mkdir_lock: locks/heavy-lock}\n")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"heavy": filepath.Join(filepath.Dir(file), "locks", "heavy-lock")}
	if got := l.Config.MkdirLocks(); !maps.Equal(got, want) {
		t.Errorf("MkdirLocks() = %v, want %v", got, want)
	}

	e = newEnv(t, "HEAVY_LOCK_DIR=/srv/heavy-lock")
	l, _, err = e.loadFile("resources:\n  heavy: {limit: 1, mkdir_lock: /tmp/heavy-lock}\n  other: {limit: 2}\n")
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Config.MkdirLocks(); !maps.Equal(got, map[string]string{"heavy": "/srv/heavy-lock"}) {
		t.Errorf("with HEAVY_LOCK_DIR: MkdirLocks() = %v", got)
	}
	if got := l.LimitOrigins()["heavy"]; !strings.Contains(got, "resources.heavy.limit") {
		t.Errorf("LimitOrigins = %q", got)
	}
	var shown string
	for _, en := range l.Show() {
		if en.Key == "resources.heavy.mkdir_lock" {
			shown = en.Value + " " + string(en.Source)
		}
	}
	if shown != "/srv/heavy-lock env" {
		t.Errorf("config show: resources.heavy.mkdir_lock = %q, want /srv/heavy-lock env", shown)
	}
	l, err = e.load(config.LoadOptions{Flags: map[string]string{"resources.heavy.mkdir_lock": "/flag/dir"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Config.MkdirLocks()["heavy"]; got != "/flag/dir" {
		t.Errorf("flag over HEAVY_LOCK_DIR: %q", got)
	}

	// HEAVY_LOCK_DIR without a bound resource binds heavy, the wrapper's
	// slot name (issue 25.2), and says so; unless heavy is configured as
	// something else (a limit other than 1).
	e = newEnv(t, "HEAVY_LOCK_DIR=/srv/heavy-lock")
	for _, yaml := range []string{"resources:\n  heavy: {limit: 1}\n", "resources:\n  other: {limit: 2}\n", ""} {
		l, _, err := e.loadFile(yaml)
		if err != nil || !maps.Equal(l.Config.MkdirLocks(), map[string]string{"heavy": "/srv/heavy-lock"}) {
			t.Fatalf("HEAVY_LOCK_DIR alone, %q: %+v, %v; want heavy bound", yaml, l, err)
		}
		if n := l.Config.MkdirLockNotes()["heavy"]; !strings.Contains(n, "/srv/heavy-lock") || !strings.Contains(n, "HEAVY_LOCK_DIR") {
			t.Errorf("MkdirLockNotes()[heavy] = %q", n)
		}
	}
	if l, _, err := e.loadFile("resources:\n  heavy: {limit: 3}\n"); err != nil || len(l.Config.MkdirLocks()) != 0 {
		t.Errorf("HEAVY_LOCK_DIR with heavy at limit 3: %v, %v; want nothing bound", l.Config.MkdirLocks(), err)
	}
	l, _, err = e.loadFile("resources:\n  heavy: {limit: 1, mkdir_lock: /tmp/x}\n")
	if err != nil || l.Config.MkdirLockNotes()["heavy"] != "" {
		t.Errorf("configured mkdir_lock: note %q, %v; want none", l.Config.MkdirLockNotes()["heavy"], err)
	}
}

func TestMkdirLockErrors(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		vars       []string
		want       []string
	}{
		{"limit not 1", "resources:\n  heavy: {limit: 2, mkdir_lock: /x}\n", nil,
			[]string{"F:2: resources.heavy.limit: 2 is not allowed with mkdir_lock: the mkdir slot is one slot; use limit 1"}},
		{"two bound", "resources:\n  a: {limit: 1, mkdir_lock: /x}\n  b: {limit: 1, mkdir_lock: /y}\n", nil,
			[]string{"F:3: resources.b.mkdir_lock: \"/y\": only one resource may be bound to a mkdir slot (HEAVY_LOCK_DIR and HEAVY_LOCK_HELD are one variable each), and resources.a already is; remove one"}},
		{"not a string", "resources:\n  a: {limit: 1, mkdir_lock: [x]}\n", nil,
			[]string{"F:2: resources.a.mkdir_lock: must be a single value, not a list"}},
		{"relative HEAVY_LOCK_DIR", "resources:\n  a: {limit: 1, mkdir_lock: /x}\n", []string{"HEAVY_LOCK_DIR=~/locks", "GOVERNOR_DIR=/tmp/state"},
			[]string{"env HEAVY_LOCK_DIR: resources.a.mkdir_lock: \"~/locks\" starts with ~ but $HOME is not set; write an absolute path"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.vars...)
			if len(tc.vars) > 0 {
				e.vars = tc.vars // no HOME
			}
			_, file, err := e.loadFile(tc.yaml)
			if got := errLines(err, file); !slices.Equal(got, tc.want) {
				t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}
