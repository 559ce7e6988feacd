package usertest_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/governor-dev/governor/internal/usertest"
)

// Reachable opens a private directory to other users and leaves its
// ancestors' modes as they were where they already let everyone through:
// the system's temporary directory keeps its sticky, world-writable mode.
func TestReachableTakesNothingAway(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.Stat(os.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	usertest.Reachable(t, dir)
	for p := dir; p != filepath.Dir(p); p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o011 != 0o011 {
			t.Errorf("%s: mode %v, not searchable by group and others", p, fi.Mode())
		}
	}
	after, err := os.Stat(os.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if tmp.Mode()&0o011 == 0o011 && after.Mode() != tmp.Mode() {
		t.Errorf("%s: mode %v became %v", os.TempDir(), tmp.Mode(), after.Mode())
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm()&0o700 != 0o700 {
		t.Errorf("%s lost its owner's bits: %v", dir, fi.Mode())
	}
}
