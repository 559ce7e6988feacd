package supervise

import "errors"

var (
	// ErrNotFound reports that the command could not be found. A shell
	// reports this case with exit code 127.
	ErrNotFound = errors.New("supervise: command not found")

	// ErrNotExecutable reports that the command was found but could not be
	// executed: no permission, a directory, an unknown executable format or
	// a missing script interpreter. A shell reports this case with exit code
	// 126.
	ErrNotExecutable = errors.New("supervise: command not executable")

	// ErrStopped is the stop reason recorded in [Exit.Stopped] when Stop is
	// given a nil reason.
	ErrStopped = errors.New("supervise: stopped")

	// ErrFinished is returned by Signal once the tree has finished and its
	// leader has been reaped.
	ErrFinished = errors.New("supervise: process tree has finished")
)
