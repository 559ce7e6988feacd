package publish

import "golang.org/x/sys/unix"

// renameNoReplace renames, refusing an existing newname (EEXIST).
func renameNoReplace(oldname, newname string) error {
	return unix.Renameat2(unix.AT_FDCWD, oldname, unix.AT_FDCWD, newname, unix.RENAME_NOREPLACE)
}
