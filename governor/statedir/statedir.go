// Package statedir is where the file backend keeps its state when the
// configuration names no directory: one rule that the configuration
// (package config, which imports no backend) and the file backend both
// ask; and how a file that other processes read there (a run's entry,
// the Redis witness) is replaced whole (WriteFile). A leaf: it imports
// only the standard library and x/sys.
package statedir

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Root is the file backend's state dir of a root run whose home is not
// root's.
const Root = "/run/governor"

// Under is the file backend's default state dir under base
// ($XDG_STATE_HOME or ~/.local/state): base/governor, except for root
// when base (or its nearest existing parent) is not owned by root, as a
// user's HOME kept by sudo is: then Root, so that root never
// makes root-owned dirs in a home that breaks its user's own governor.
// The configuration (package config) and the file backend both ask it.
func Under(base string) string {
	if os.Geteuid() == 0 {
		for p := base; ; p = filepath.Dir(p) {
			var st unix.Stat_t
			if err := unix.Stat(p, &st); err == nil {
				if st.Uid != 0 {
					return Root
				}
				break
			}
			if p == filepath.Dir(p) {
				break
			}
		}
	}
	return filepath.Join(base, "governor")
}

// WriteFile replaces path by data, whole, with mode 0600: it writes a
// temporary file beside path and renames it over path. A reader of path
// finds the file as it was, or as it is now, never a part of it, even if
// the writer is stopped or killed between its writes (a run entry created
// empty and stopped before its write named no tree to the next run, which
// started beside the orphaned one). On failure the temporary file is
// removed; a writer killed before the rename leaves it, named
// "."+base(path)+".*.tmp", which no reader of path looks at.
func WriteFile(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
	}
	return err
}
