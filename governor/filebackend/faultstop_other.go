//go:build governor_faults && !linux

package filebackend

import "golang.org/x/sys/unix"

// stopSelf stops the process: macOS suspends a task as a whole.
func stopSelf() { _ = unix.Kill(unix.Getpid(), unix.SIGSTOP) }
