package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/governor-dev/governor/config"
)

// env is a test environment: a home and a working directory under a
// temporary directory, and nothing from the process environment.
type env struct {
	t    *testing.T
	home string
	cwd  string
	vars []string
}

func newEnv(t *testing.T, vars ...string) *env {
	t.Helper()
	dir := t.TempDir()
	e := &env{t: t, home: filepath.Join(dir, "home"), cwd: filepath.Join(dir, "work")}
	for _, d := range []string{e.home, e.cwd} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	e.vars = append([]string{"HOME=" + e.home}, vars...)
	return e
}

// write writes content to path (relative paths under the working
// directory) and returns the absolute path.
func (e *env) write(path, content string) string {
	e.t.Helper()
	if !filepath.IsAbs(path) {
		path = filepath.Join(e.cwd, path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
	return path
}

// load runs Load with the test environment; opts.Env, if set, is added to it.
func (e *env) load(opts config.LoadOptions) (*config.Loaded, error) {
	opts.Env = append(append([]string{}, e.vars...), opts.Env...)
	opts.Getwd = func() (string, error) { return e.cwd, nil }
	return config.Load(opts)
}

// found loads with opts and fails the test unless Load picked wantFile
// and, where wantProject is not empty, read that project from it.
func (e *env) found(opts config.LoadOptions, wantFile, wantProject string) {
	e.t.Helper()
	l, err := e.load(opts)
	if err != nil {
		e.t.Fatal(err)
	}
	if l.File != wantFile || (wantProject != "" && l.Config.Project != wantProject) {
		e.t.Errorf("File %q project %q, want %q %s", l.File, l.Config.Project, wantFile, wantProject)
	}
}

// loadFile writes content to ./exec-defaults.yaml and loads it.
func (e *env) loadFile(content string) (*config.Loaded, string, error) {
	e.t.Helper()
	path := e.write(config.DefaultFileName, content)
	l, err := e.load(config.LoadOptions{})
	return l, path, err
}

// errLines splits a joined error into its lines, with file replaced by F.
func errLines(err error, file string) []string {
	if err == nil {
		return nil
	}
	s := err.Error()
	if file != "" {
		s = strings.ReplaceAll(s, file, "F")
	}
	return strings.Split(s, "\n")
}

func intp(n int) *int { return &n }

// sampleLimits is the limits part of the sample configuration the
// examples and TestShow load.
const sampleLimits = `run:
  max_concurrent_runs: 4
providers:
  anthropic:
    max_concurrency: 2
    requests_per_minute: 50
resources:
  heavy: {limit: 1}
`

// exampleDir makes a directory holding an exec-defaults.yaml for examples,
// which have no *testing.T.
func exampleDir() (string, func()) {
	dir, err := os.MkdirTemp("", "governor-config-example")
	if err != nil {
		panic(err)
	}
	writeFile(filepath.Join(dir, config.DefaultFileName), `project: prj-0001
redis:
  url: redis://u:secret@127.0.0.1:6379/0
`+sampleLimits)
	return dir, func() { os.RemoveAll(dir) }
}

func writeFile(path, content string) {
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		panic(err)
	}
}
