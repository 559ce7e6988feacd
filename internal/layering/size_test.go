package layering

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// maxLines is the house rule for a source file (tests aside), in every
// language of the repository: past it, a file holds more than one job and
// is split by job.
const maxLines = 600

// sourceExts are the languages the rule covers: Go, the Lua scripts, the
// Python client, the TypeScript client (and the soak's JavaScript client).
var sourceExts = []string{".go", ".lua", ".py", ".ts", ".mjs", ".js"}

// isTest says whether path is a test: Go's _test.go, the clients' test
// folders, Python's test_*.py.
func isTest(path string) bool {
	base := filepath.Base(path)
	return strings.HasSuffix(base, "_test.go") || strings.HasPrefix(base, "test_") ||
		strings.Contains(filepath.ToSlash(path), "/tests/") || strings.Contains(filepath.ToSlash(path), "/test/")
}

// TestFileSize: no non-test source file of the repository is longer than
// maxLines (build output and dependencies aside).
func TestFileSize(t *testing.T) {
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "dist" || d.Name() == "build" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !slices.Contains(sourceExts, filepath.Ext(path)) || isTest(path) {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if n := bytes.Count(b, []byte("\n")); n > maxLines {
			t.Errorf("%s has %d lines (the rule is %d): split it by job", path, n, maxLines)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
