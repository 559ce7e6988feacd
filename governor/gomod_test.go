package governor_test

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The go line of go.mod is the oldest Go release the code needs: the
// newest go line among the modules whose packages it builds (with
// tests), not a later patch release that would force every importing
// module up.
func TestGoModGoLineIsTheOldestNeeded(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		cmd := exec.Command(goTool, args...)
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go %s: %v", strings.Join(args, " "), err)
		}
		return string(out)
	}
	main := strings.TrimSpace(run("list", "-m", "-f", "{{.Path}} {{.GoVersion}}"))
	mainPath, mainGo, _ := strings.Cut(main, " ")
	need, by := "", ""
	for _, line := range strings.Split(run("list", "-deps", "-test", "-f", "{{with .Module}}{{.Path}} {{.GoVersion}}{{end}}", "./..."), "\n") {
		path, v, ok := strings.Cut(line, " ")
		if !ok || path == mainPath || v == "" {
			continue
		}
		if need == "" || versionLess(need, v) {
			need, by = v, path
		}
	}
	if need != "" && mainGo != need {
		t.Fatalf("go.mod says go %s; the oldest release the code and its dependencies need is %s (%s)", mainGo, need, by)
	}
}

// versionLess compares Go versions such as 1.26 and 1.26.0 (a language
// version sorts before its first release, as the go command has it).
func versionLess(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < max(len(pa), len(pb)); i++ {
		na, nb := -1, -1
		if i < len(pa) {
			na, _ = strconv.Atoi(pa[i])
		}
		if i < len(pb) {
			nb, _ = strconv.Atoi(pb[i])
		}
		if na != nb {
			return na < nb
		}
	}
	return false
}
