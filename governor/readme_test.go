package governor_test

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// readmeImports are the packages README's Go blocks may use, by the name
// they are used with.
var readmeImports = map[string]string{
	"context":      "context",
	"errors":       "errors",
	"fmt":          "fmt",
	"http":         "net/http",
	"time":         "time",
	"governor":     "github.com/governor-dev/governor/governor",
	"redisbackend": "github.com/governor-dev/governor/governor/redisbackend",
	"filebackend":  "github.com/governor-dev/governor/governor/filebackend",
	"capacity":     "github.com/governor-dev/governor/governor/capacity",
}

// readmeMain runs the library example against a Redis that is down: it
// must return an error, not panic.
const readmeMain = `
func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	called := false
	err := protect(ctx, "redis://127.0.0.1:1/0?max_retries=-1", func(context.Context, int64) error { called = true; return nil })
	if err == nil || called {
		fmt.Println("protect with Redis down: err", err, "called", called)
		os.Exit(1)
	}
	_ = ask
	_ = complete
	fmt.Println("error:", err)
}
`

// docsWithGo are the pages whose Go blocks TestREADMEGo builds, and what
// each must show.
var docsWithGo = map[string]string{
	"README.md":         "the gate in an agent",
	"docs/library.md":   "the library example",
	"docs/providers.md": "the provider gate",
	"docs/capacity.md":  "capacity shares turned on",
}

// TestREADMEGo compiles, vets and runs the Go blocks of README and docs: every block
// is a complete declaration, put in one package main with the imports it
// uses, built in the module through an overlay (nothing is written into
// the source tree).
func TestREADMEGo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH")
	}
	var blocks [][]string
	for _, name := range slices.Sorted(maps.Keys(docsWithGo)) {
		text, err := os.ReadFile(filepath.Join("..", name))
		if err != nil {
			t.Fatal(err)
		}
		found := regexp.MustCompile("(?s)\n```go\n(.*?)\n```\n").FindAllStringSubmatch(string(text), -1)
		if len(found) == 0 {
			t.Fatalf("found no Go block in %s, want %s", name, docsWithGo[name])
		}
		blocks = append(blocks, found...)
	}
	var body strings.Builder
	for _, b := range blocks {
		body.WriteString(b[1] + "\n\n")
	}
	body.WriteString(readmeMain)
	// The imports are the packages the code (not its comments) names.
	f, err := parser.ParseFile(token.NewFileSet(), "README.md", "package main\n"+body.String(), 0)
	if err != nil {
		t.Fatalf("the Go blocks of README and docs do not parse: %v", err)
	}
	used := map[string]bool{"os": true}
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && readmeImports[id.Name] != "" {
				used[id.Name] = true
			}
		}
		return true
	})
	var src strings.Builder
	src.WriteString("package main\n\nimport (\n")
	for name := range used {
		path := readmeImports[name]
		if name == "os" {
			path = "os"
		}
		src.WriteString("\t\"" + path + "\"\n")
	}
	src.WriteString(")\n\n" + body.String())

	dir := t.TempDir()
	file := filepath.Join(dir, "main.go")
	if err := os.WriteFile(file, []byte(src.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	// A directory of its own, which ./... skips (testdata), and which
	// exists, since go vet runs in it.
	pkg := filepath.Join(root, "governor", "testdata", "readme")
	overlay, _ := json.Marshal(map[string]any{"Replace": map[string]string{filepath.Join(pkg, "main.go"): file}})
	overlayFile := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(overlayFile, overlay, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"vet"}, {"run"}} {
		cmd := exec.Command(goTool, append(args, "-overlay", overlayFile, "./governor/testdata/readme")...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=readonly")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s of README's Go blocks: %v\n%s\n--- the program:\n%s", args[0], err, out, src.String())
		}
		if args[0] == "run" && !strings.Contains(string(out), "error:") {
			t.Fatalf("go run: %s", out)
		}
	}
}
