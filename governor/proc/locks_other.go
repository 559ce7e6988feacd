//go:build !linux

package proc

import "errors"

// Locks fails with errors.ErrUnsupported: this system has no /proc/locks
// (macOS: fcntl(F_GETLK) sees only POSIX locks, and only one at a time).
func Locks() ([]Lock, error) { return nil, errors.ErrUnsupported }
