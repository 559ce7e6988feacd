//go:build !linux && !darwin

package supervise

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// Tree is a supervised process tree. Supervision needs Linux or macOS; elsewhere
// Start always fails.
type Tree struct{}

// Start returns an error wrapping errors.ErrUnsupported: process-tree
// supervision is implemented for Linux and macOS only.
func Start(opts Options) (*Tree, error) {
	return nil, fmt.Errorf("supervise: %w on this system", errors.ErrUnsupported)
}

// A Member is a process of a tree, by pid and start time.
type Member struct {
	PID   int
	Start uint64
}

// Members returns nil.
func (t *Tree) Members() []Member { return nil }

// Done returns a closed channel.
func (t *Tree) Done() <-chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// Wait returns errors.ErrUnsupported.
func (t *Tree) Wait() (Exit, error) { return Exit{}, errors.ErrUnsupported }

// Signal returns ErrFinished.
func (t *Tree) Signal(sig syscall.Signal) error { return ErrFinished }

// Stop does nothing.
func (t *Tree) Stop(reason error) {}

// StopBy does nothing.
func (t *Tree) StopBy(reason error, killAt time.Time) {}

// ForegroundTerminal returns nil: there is no tree to give a terminal to.
func ForegroundTerminal(f *os.File) *os.File { return nil }
