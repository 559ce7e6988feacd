package runner

// SelfExecutable returns the path that runs this program again, for
// Options.Watchdog: /proc/self/exe, which names the running binary even
// if its file has been replaced or removed since.
func SelfExecutable() string { return "/proc/self/exe" }
