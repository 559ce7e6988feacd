//go:build !linux

package supervise

import (
	"errors"
	"syscall"
)

// cgroup is never made on this system: a Tree's cg stays nil.
type cgroup struct{}

func (c *cgroup) populated() bool                                 { return false }
func (c *cgroup) kill() error                                     { return errors.ErrUnsupported }
func (c *cgroup) signal(syscall.Signal, func(pid int) bool) error { return errors.ErrUnsupported }
func (c *cgroup) remove()                                         {}
