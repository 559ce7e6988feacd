// Package fstrust holds the one rule for a directory whose entries decide
// what governor does (the file backend's state dir and its parents, the
// with-heavy-lock directory): only root or the user may add, remove or
// rename its entries, so no other user can swap one for a link or a file
// of theirs.
package fstrust

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// DirProblem returns "" when only root or the user euid can add, remove or
// rename entries of a directory owned by uid with mode (a stat(2) st_mode).
// Otherwise it says what lets another user do so, as a phrase to follow
// "DIR is": "owned by uid N", or "writable by group or others (mode 0775)
// without the sticky bit". A sticky directory (as /tmp) is fine: its
// entries can be renamed or removed only by their owners.
func DirProblem(uid, mode uint32, euid int) string {
	perm := mode & 0o7777
	switch {
	case uid != 0 && int(uid) != euid:
		return fmt.Sprintf("owned by uid %d, neither root nor you (uid %d)", uid, euid)
	case perm&0o022 != 0 && perm&unix.S_ISVTX == 0:
		return fmt.Sprintf("writable by group or others (mode %04o) without the sticky bit", perm)
	}
	return ""
}

// FileProblem returns "" when only root or the user euid can write a file
// owned by uid with mode; otherwise what lets another user write it, as a
// phrase to follow "FILE is": "owned by uid N", or "writable by group or
// others (mode 0664)".
func FileProblem(uid, mode uint32, euid int) string {
	perm := mode & 0o7777
	switch {
	case uid != 0 && int(uid) != euid:
		return fmt.Sprintf("owned by uid %d, neither root nor you (uid %d)", uid, euid)
	case perm&0o022 != 0:
		return fmt.Sprintf("writable by group or others (mode %04o)", perm)
	}
	return ""
}
