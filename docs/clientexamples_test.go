package docs

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/governor-dev/governor/internal/proctest"
)

// clientTags are the info strings of a Python, JavaScript or TypeScript
// example, by the language it runs as.
var clientTags = map[string]string{"python": "python", "py": "python", "js": "js", "javascript": "js", "ts": "ts", "typescript": "ts"}

// Every Python, JavaScript and TypeScript example of README and docs/ runs
// here as written, on a fresh machine: no configuration (HOME and the
// working directory are an empty temporary directory), state in a
// GOVERNOR_DIR of its own, the built governor as GOVERNOR_BIN and the
// clients of this tree (Python's on PYTHONPATH, TypeScript's as
// node_modules/@governor/client). Python runs as a script; JavaScript as an
// .mjs module under the node on PATH (.ci/run's: Node 20); TypeScript is
// compiled by the pinned TypeScript of clients/typescript, then run. Or an
// example is marked on the line before it, as the shell ones are.
//
// The TypeScript client must be built (cd clients/typescript && npm ci &&
// npm run build): without it the JavaScript and TypeScript examples are
// skipped, unless GOVERNOR_REQUIRE_NODE=1 (.ci/run, after its build).
// With GOVERNOR_CLIENT_EXAMPLES_DONE=1 the test skips: .ci/run ran it
// whole just before, beside the Go suite, whose run of this package
// then does not run the examples again.
func TestDocsClientExamples(t *testing.T) {
	if os.Getenv("GOVERNOR_CLIENT_EXAMPLES_DONE") == "1" {
		t.Skip("run before, by .ci/run (GOVERNOR_CLIENT_EXAMPLES_DONE=1)")
	}
	run := runnable(t, func(tag string) bool { return clientTags[tag] != "" })
	if len(run) == 0 {
		t.Fatal("no runnable client example found: the extraction is broken")
	}
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 not on PATH")
	}
	tsDir, err := filepath.Abs("../clients/typescript")
	if err != nil {
		t.Fatal(err)
	}
	pyDir, err := filepath.Abs("../clients/python")
	if err != nil {
		t.Fatal(err)
	}
	noNode := ""
	if _, err := os.Stat(filepath.Join(tsDir, "dist", "src", "index.js")); err != nil {
		noNode = "clients/typescript is not built (npm ci && npm run build)"
	} else if _, err := os.Stat(filepath.Join(tsDir, "node_modules", "typescript", "bin", "tsc")); err != nil {
		noNode = "clients/typescript has no node_modules (npm ci)"
	} else if _, err := exec.LookPath("node"); err != nil {
		noNode = "no node on PATH"
	}
	bin, err := proctest.BuildGovernor(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var compiled map[string]string
	if noNode == "" {
		compiled = compileTS(t, tsDir, run)
	}
	for _, ex := range run {
		lang := clientTags[ex.tag]
		t.Run(filepath.Base(ex.page)+":"+itoa(ex.line), func(t *testing.T) {
			if lang != "python" && noNode != "" {
				if os.Getenv("GOVERNOR_REQUIRE_NODE") == "1" {
					t.Fatal(noNode + ", and GOVERNOR_REQUIRE_NODE=1 requires the JavaScript and TypeScript examples to run")
				}
				t.Skip(noNode)
			}
			dir := t.TempDir()
			env := slicesDelete(os.Environ(), "GOVERNOR_", "PYTHONPATH=", "NODE_PATH=", "NODE_OPTIONS=")
			env = append(env, "GOVERNOR_BIN="+bin, "GOVERNOR_DIR="+filepath.Join(dir, "state"), "HOME="+dir,
				"XDG_CONFIG_HOME="+filepath.Join(dir, ".config"), "PYTHONPATH="+pyDir,
				"PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
			var steps [][]string
			switch lang {
			case "python":
				write(t, dir, "example.py", ex.body)
				steps = [][]string{{python, "example.py"}}
			case "js":
				nodeProject(t, dir, tsDir)
				write(t, dir, "example.mjs", ex.body)
				steps = [][]string{{"node", "example.mjs"}}
			case "ts":
				js, ok := compiled[tsName(ex)]
				if !ok {
					t.Fatalf("%s:%d: the example does not compile (TypeScript %s):\n%s\n--- the example:\n%s", ex.page, ex.line, tsDir, compiled[tsName(ex)+" errors"], ex.body)
				}
				steps = [][]string{{"node", js}}
			}
			for _, step := range steps {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				cmd := exec.CommandContext(ctx, step[0], step[1:]...)
				cmd.Dir, cmd.Env = dir, env
				out, err := cmd.CombinedOutput()
				cancel()
				if err != nil {
					t.Fatalf("%s:%d: the example fails (%s): %v\n%s\n--- the example:\n%s", ex.page, ex.line, strings.Join(step, " "), err, out, ex.body)
				}
			}
		})
	}
}

// compileTS compiles the TypeScript examples of run in one project with
// the pinned TypeScript (one tsc run: each takes seconds), each example a
// module of its own. It returns the compiled file of each by tsName, or
// under tsName+" errors" what tsc said of it.
func compileTS(t *testing.T, tsDir string, run []example) map[string]string {
	t.Helper()
	dir := t.TempDir()
	nodeProject(t, dir, tsDir)
	var files []string
	for _, ex := range run {
		if clientTags[ex.tag] == "ts" {
			// A file without import or export would be a script, its names
			// shared with the other examples'; each is a module, as in a project.
			write(t, dir, tsName(ex)+".ts", ex.body+"\nexport {};\n")
			files = append(files, quote(tsName(ex)+".ts"))
		}
	}
	write(t, dir, "tsconfig.json", `{"compilerOptions": {"target": "ES2022", "lib": ["ES2022", "esnext.disposable", "DOM"],
  "module": "NodeNext", "moduleResolution": "NodeNext", "strict": true, "skipLibCheck": true,
  "types": ["node"], "typeRoots": [`+quote(filepath.Join(tsDir, "node_modules", "@types"))+`]}, "files": [`+strings.Join(files, ", ")+`]}`)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join(tsDir, "node_modules", "typescript", "bin", "tsc"), "-p", ".")
	cmd.Dir = dir
	out, _ := cmd.CombinedOutput() // errors are told per example below
	got := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if name, _, ok := strings.Cut(line, ".ts("); ok {
			got[name+" errors"] += line + "\n"
		}
	}
	for _, ex := range run {
		n := tsName(ex)
		if clientTags[ex.tag] == "ts" && got[n+" errors"] == "" {
			if _, err := os.Stat(filepath.Join(dir, n+".js")); err != nil {
				got[n+" errors"] = "no " + n + ".js: " + string(out)
				continue
			}
			got[n] = filepath.Join(dir, n+".js")
		}
	}
	return got
}

// tsName is the file name (without .ts) of a TypeScript example.
func tsName(ex example) string {
	return strings.TrimSuffix(filepath.Base(ex.page), ".md") + "_" + itoa(ex.line)
}

// nodeProject makes dir an ES module project whose @governor/client is
// the tree's client.
func nodeProject(t *testing.T, dir, client string) {
	t.Helper()
	write(t, dir, "package.json", `{"type": "module", "private": true}`)
	if err := os.MkdirAll(filepath.Join(dir, "node_modules", "@governor"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(client, filepath.Join(dir, "node_modules", "@governor", "client")); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, dir, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func quote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"` }

// README says which Node takes which form: its `await using` example, as
// plain JavaScript, is a SyntaxError before Node 24 (there, the plain form
// is withSlot or try/finally, which TestDocsClientExamples runs on the
// node on PATH) and valid from 24 on.
func TestDocsAwaitUsingNeedsNode24(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		if os.Getenv("GOVERNOR_REQUIRE_NODE") == "1" {
			t.Fatal("no node on PATH, and GOVERNOR_REQUIRE_NODE=1")
		}
		t.Skip("no node on PATH")
	}
	var body string
	for _, ex := range examples(t, "../README.md") {
		if clientTags[ex.tag] == "ts" && strings.Contains(ex.body, "await using") {
			body = ex.body
			break
		}
	}
	if body == "" {
		t.Fatal("README has no TypeScript example with await using")
	}
	out, err := exec.Command("node", "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	major, err := strconv.Atoi(strings.TrimPrefix(strings.SplitN(strings.TrimSpace(string(out)), ".", 2)[0], "v"))
	if err != nil {
		t.Fatalf("node --version: %q", out)
	}
	dir := t.TempDir()
	write(t, dir, "example.mjs", body)
	check, err := exec.Command("node", "--check", filepath.Join(dir, "example.mjs")).CombinedOutput()
	switch {
	case major < 24 && (err == nil || !strings.Contains(string(check), "SyntaxError")):
		t.Errorf("node %d takes README's await using as plain JavaScript (%v, %s): README says it needs Node 24", major, err, check)
	case major >= 24 && err != nil:
		t.Errorf("node %d refuses README's await using as plain JavaScript: %v\n%s", major, err, check)
	}
}
