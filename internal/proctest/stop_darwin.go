package proctest

import "github.com/governor-dev/governor/governor/proc"

// threadsStopped reports whether pid is stopped (or gone): macOS
// suspends a task as a whole.
func threadsStopped(pid int) bool {
	s, err := proc.Stat(pid)
	return err != nil || s.Stopped()
}
