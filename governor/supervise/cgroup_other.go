//go:build !linux

package supervise

import (
	"errors"
	"syscall"
	"time"
)

// ChildCgroup reports that there are no cgroups on this system.
func ChildCgroup(name string) (string, bool) { return "", false }

// KillCgroup is not supported on this system.
func KillCgroup(dir string) error { return errors.ErrUnsupported }

// RemoveCgroup is not supported on this system.
func RemoveCgroup(dir string, wait time.Duration) error { return errors.ErrUnsupported }

// cgroup is never made on this system: a Tree's cg stays nil.
type cgroup struct{}

func (c *cgroup) populated() bool                                 { return false }
func (c *cgroup) kill() error                                     { return errors.ErrUnsupported }
func (c *cgroup) signal(syscall.Signal, func(pid int) bool) error { return errors.ErrUnsupported }
func (c *cgroup) remove()                                         {}
