//go:build !linux

package proc

import (
	"errors"
	"time"
)

// ChildCgroup reports that there are no cgroups on this system.
func ChildCgroup(name string) (string, bool) { return "", false }

// CgroupOf reports that there are no cgroups on this system.
func CgroupOf(pid int) (string, bool) { return "", false }

// KillCgroup is not supported on this system.
func KillCgroup(dir string) error { return errors.ErrUnsupported }

// RemoveCgroup is not supported on this system.
func RemoveCgroup(dir string, wait time.Duration) error { return errors.ErrUnsupported }
