package docs

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/governor-dev/governor/internal/proctest"
)

// shellTags are the info strings of a shell example.
var shellTags = map[string]bool{"sh": true, "bash": true, "shell": true, "console": true}

var (
	// markRE is the line before an example that is not run here: an HTML
	// comment saying which test runs it, or why it cannot run.
	runByRE  = regexp.MustCompile(`^<!--.*\brun by (Test\w+)\b.*-->$`)
	notRunRE = regexp.MustCompile(`^<!--.*\bnot run: (\S.*\S)\s*-->$`)
	// untaggedShellRE: an untagged block that starts like a command must
	// say it is shell (and then run or be marked).
	untaggedShellRE = regexp.MustCompile(`^(\$ |governor |go |pip |python3? -m |npm |cd |curl |brew |release/|clients/)`)
)

type example struct {
	page      string
	line      int
	tag, body string
	mark      string // the comment before it, "" when none
}

// examples returns the fenced blocks of page with the HTML comment, if
// any, on the last non-blank line before each.
func examples(t *testing.T, page string) []example {
	t.Helper()
	f, err := os.Open(page)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []example
	var cur *example
	prev := ""
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && strings.HasPrefix(line, "```"):
			cur = &example{page: page, line: n, tag: strings.TrimSpace(strings.TrimPrefix(line, "```"))}
			if strings.HasPrefix(prev, "<!--") {
				cur.mark = prev
			}
		case cur != nil && strings.HasPrefix(line, "```"):
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.body += line + "\n"
		}
		if strings.TrimSpace(line) != "" {
			prev = strings.TrimSpace(line)
		}
	}
	return out
}

// testNames are the Test functions of the module's test files.
func testNames(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	re := regexp.MustCompile(`(?m)^func (Test\w+)\(`)
	err := filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".") && path != "..") {
			return filepath.SkipDir
		}
		if strings.HasSuffix(path, "_test.go") {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range re.FindAllStringSubmatch(string(b), -1) {
				names[m[1]] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// Every shell example of README and docs/ runs here as written (bash, set
// -euo pipefail, the built governor on PATH, a file backend of its own, in
// a project configured as docs/configuration.md's first example), or is
// marked on the line before it: <!-- example: run by TestName -->
// (a test that exists) or <!-- example: not run: REASON -->.
func TestDocsShellExamples(t *testing.T) {
	run := runnable(t, func(tag string) bool { return shellTags[tag] })
	if len(run) == 0 {
		t.Fatal("no runnable shell example found: the extraction is broken")
	}
	bin, err := proctest.BuildGovernor(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var config string
	for _, ex := range examples(t, "configuration.md") {
		if ex.tag == "yaml" {
			config = ex.body
			break
		}
	}
	for _, ex := range run {
		t.Run(filepath.Base(ex.page)+":"+itoa(ex.line), func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "exec-defaults.yaml"), []byte(config), 0o644); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "bash", "-c", "set -euo pipefail\n"+ex.body)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"),
				"GOVERNOR_DIR="+filepath.Join(dir, "state"), "GOVERNOR_PROJECT=docs-example", "GOVERNOR_BACKEND=file",
				"HOME="+dir, "XDG_CONFIG_HOME="+filepath.Join(dir, ".config"))
			cmd.Env = slicesDelete(cmd.Env, "GOVERNOR_REDIS_URL=", "GOVERNOR_CONFIG=")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("%s:%d: the example fails: %v\n%s\n--- the example:\n%s", ex.page, ex.line, err, out, ex.body)
			}
		})
	}
}

// runnable returns the examples of README and docs/ whose tag want
// takes, but for those marked on the line before as run by a test (which
// must exist) or not run (with its reason); a malformed mark is an error.
// For shell, an untagged block that reads as shell is an error too.
func runnable(t *testing.T, want func(tag string) bool) []example {
	t.Helper()
	pages, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	tests := testNames(t)
	var run []example
	for _, page := range append([]string{"../README.md"}, pages...) {
		for _, ex := range examples(t, page) {
			where := ex.page + ":" + itoa(ex.line)
			if want("sh") && ex.tag == "" && untaggedShellRE.MatchString(ex.body) {
				t.Errorf("%s: an untagged block that reads as shell (%q): tag it sh (and run it or mark it), or text", where, firstLine(ex.body))
				continue
			}
			if !want(ex.tag) {
				continue
			}
			switch m := runByRE.FindStringSubmatch(ex.mark); {
			case m != nil:
				if !tests[m[1]] {
					t.Errorf("%s: marked as run by %s, which is no test of the module", where, m[1])
				}
			case notRunRE.MatchString(ex.mark):
			case strings.Contains(ex.mark, "example:"):
				t.Errorf("%s: mark %q: want \"<!-- example: run by TestName -->\" or \"<!-- example: not run: REASON -->\"", where, ex.mark)
			default:
				run = append(run, ex)
			}
		}
	}
	return run
}

// docs/cli.md's lease idiom is README's, which TestREADMEShellLease runs.
func TestDocsLeaseIdiomIsREADMEs(t *testing.T) {
	find := func(page string) string {
		for _, ex := range examples(t, page) {
			if strings.Contains(ex.mark, "run by TestREADMEShellLease") {
				return ex.body
			}
		}
		t.Fatalf("%s: no example marked as run by TestREADMEShellLease", page)
		return ""
	}
	if find("../README.md") != find("cli.md") {
		t.Errorf("docs/cli.md's lease example is not README's, which TestREADMEShellLease runs: make them one")
	}
}

func firstLine(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }

func itoa(n int) string { return strconv.Itoa(n) }

// slicesDelete drops the variables of env with one of prefixes.
func slicesDelete(env []string, prefixes ...string) []string {
	out := env[:0:0]
	for _, kv := range env {
		keep := true
		for _, p := range prefixes {
			keep = keep && !strings.HasPrefix(kv, p)
		}
		if keep {
			out = append(out, kv)
		}
	}
	return out
}
