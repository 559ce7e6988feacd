package statedir

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestWriteFileWhole: a reader of the path, reading while it is replaced
// again and again, finds one whole version or the other, never an empty
// or a torn file (os.WriteFile, which truncates and then writes, shows
// it one); nothing is left beside the path, and its mode is 0600.
func TestWriteFileWhole(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "entry.json")
	versions := [][]byte{bytes.Repeat([]byte("a"), 1<<16), bytes.Repeat([]byte("b"), 1<<16)}
	if err := WriteFile(path, versions[0]); err != nil {
		t.Fatal(err)
	}
	const writes = 400
	done := make(chan error, 1)
	go func() {
		for i := range writes {
			if err := WriteFile(path, versions[i%2]); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	reads := 0
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			ents, _ := os.ReadDir(dir)
			if len(ents) != 1 {
				t.Errorf("left beside the path: %v, want only %s", ents, filepath.Base(path))
			}
			if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("mode of %s: %v (%v), want 0600", path, fi.Mode(), err)
			}
			t.Logf("%d reads during %d writes, each whole", reads, writes)
			return
		default:
		}
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, versions[0]) && !bytes.Equal(got, versions[1]) {
			t.Fatalf("read %d: %d bytes (%v), want one whole version of %d", reads, len(got), err, len(versions[0]))
		}
		reads++
	}
}

// TestWriteFileFails: a path whose directory does not exist is an error
// that names it, and nothing is made.
func TestWriteFileFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "none", "entry.json")
	err := WriteFile(path, []byte("x"))
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte(filepath.Dir(path))) {
		t.Fatalf("WriteFile into a missing dir: %v, want an error naming %s", err, filepath.Dir(path))
	}
	if _, err := os.Stat(filepath.Dir(path)); !os.IsNotExist(err) {
		t.Errorf("the missing dir: %v, want still missing", err)
	}
}
