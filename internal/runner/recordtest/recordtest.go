// Package recordtest reads a --record file for tests of governor run.
package recordtest

import (
	"os"
	"testing"

	"github.com/governor-dev/governor/internal/runner"
)

// All returns every record of path, grant and end, failing t when the
// file cannot be read or parsed.
func All(t testing.TB, path string) []runner.Record {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out, err := runner.ReadRecords(f)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Ends returns the end records of path, one per finished run.
func Ends(t testing.TB, path string) []runner.Record {
	t.Helper()
	var out []runner.Record
	for _, r := range All(t, path) {
		if r.Kind == runner.KindEnd {
			out = append(out, r)
		}
	}
	return out
}
