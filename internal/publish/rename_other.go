//go:build !linux && !darwin

package publish

import "syscall"

// renameNoReplace is not available here: the checked rename is used.
func renameNoReplace(oldname, newname string) error { return syscall.ENOTSUP }
