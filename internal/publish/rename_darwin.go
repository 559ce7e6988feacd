package publish

import "golang.org/x/sys/unix"

// renameNoReplace renames, refusing an existing newname (EEXIST).
func renameNoReplace(oldname, newname string) error {
	return unix.RenamexNp(oldname, newname, unix.RENAME_EXCL)
}
