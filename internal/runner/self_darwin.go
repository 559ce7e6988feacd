package runner

import "os"

// SelfExecutable returns the path that runs this program again, for
// Options.Watchdog: os.Executable (the path the kernel recorded at exec;
// macOS has no /proc/self/exe), or os.Args[0] when it is unknown.
func SelfExecutable() string {
	if p, err := os.Executable(); err == nil {
		return p
	}
	return os.Args[0]
}
