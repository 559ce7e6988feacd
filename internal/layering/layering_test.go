package layering

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/governor-dev/governor"

// toolPackages are the tool's packages: what `governor` the program is
// made of beside the library. The library never imports them.
var toolPackages = []string{"runner", "supervise", "mkdirslot", "publish", "redact", "acquire", "connect",
	"bridge", "statuspage", "view", "words", "exitcode"}

// backendPackages are the library's backends: the tool picks one
// (internal/connect); the configuration names one without importing it.
var backendPackages = []string{"governor/filebackend", "governor/redisbackend"}

// leaves are tool packages config may import: text helpers that import
// no package of the module (checked below), so that config stays at the
// bottom of the graph. redact is the one rule of what a secret is, and
// config redacts the Redis URL by it. (The library's own leaves, safetext
// and fstrust, live under governor/: config may import the library.)
var leaves = []string{"internal/redact"}

type pkg struct {
	ImportPath string
	Deps       []string
}

// graph lists every package of the module with its dependencies (go list
// -deps: transitive, tests left out).
func graph(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Deps", module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// rel is path inside the module ("" when outside it).
func rel(path string) string {
	if path == module {
		return "."
	}
	r, ok := strings.CutPrefix(path, module+"/")
	if !ok {
		return ""
	}
	return r
}

func isTool(r string) bool {
	for _, t := range toolPackages {
		if r == "internal/"+t || strings.HasPrefix(r, "internal/"+t+"/") {
			return true
		}
	}
	return false
}

func under(r, dir string) bool { return r == dir || strings.HasPrefix(r, dir+"/") }

// problems returns what breaks the layering in pkgs, one line each.
func problems(pkgs []pkg) []string {
	var out []string
	for _, p := range pkgs {
		from := rel(p.ImportPath)
		for _, d := range p.Deps {
			to := rel(d)
			if to == "" {
				continue
			}
			switch {
			case under(from, "governor") && isTool(to):
				out = append(out, fmt.Sprintf("%s (the library) depends on %s (a tool package)", from, to))
			case under(from, "governor") && under(to, "internal"):
				out = append(out, fmt.Sprintf("%s (the library) depends on %s: the library's leaves live under governor/", from, to))
			case from == "config" && (isTool(to) && !slices.Contains(leaves, to) || slices.ContainsFunc(backendPackages, func(b string) bool { return under(to, b) })):
				out = append(out, fmt.Sprintf("config depends on %s (a tool or backend package)", to))
			case slices.Contains(leaves, from) && to != "." && !slices.Contains(leaves, to):
				out = append(out, fmt.Sprintf("%s (a leaf config may import) depends on %s", from, to))
			case isTool(from) && under(to, "cmd"):
				out = append(out, fmt.Sprintf("%s (a tool package) depends on %s (the wiring)", from, to))
			}
		}
	}
	return out
}

// TestLayering: the library imports no tool package, config no tool or
// backend package (but the leaves), and no tool package imports cmd.
func TestLayering(t *testing.T) {
	pkgs := graph(t)
	if len(pkgs) < 10 {
		t.Fatalf("go list found %d packages", len(pkgs))
	}
	for _, p := range problems(pkgs) {
		t.Error(p)
	}
}

// The check itself: each rule catches its break.
func TestLayeringCatches(t *testing.T) {
	for _, tc := range []struct {
		from, to string
	}{
		{"governor", "internal/runner"},
		{"governor/filebackend", "internal/redact"},
		{"config", "internal/mkdirslot"},
		{"config", "governor/filebackend"},
		{"internal/acquire", "cmd/governor"},
		{"internal/redact", "governor"},
		{"governor/filebackend", "internal/leasetest"},
	} {
		p := pkg{ImportPath: module + "/" + tc.from, Deps: []string{module + "/" + tc.to}}
		if len(problems([]pkg{p})) != 1 {
			t.Errorf("%s importing %s is not caught", tc.from, tc.to)
		}
	}
	if p := (pkg{ImportPath: module + "/config", Deps: []string{module + "/internal/redact", module + "/governor"}}); len(problems([]pkg{p})) != 0 {
		t.Errorf("config importing the library and a leaf is refused: %v", problems([]pkg{p}))
	}
}
