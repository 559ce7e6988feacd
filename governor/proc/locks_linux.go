package proc

// Locks returns the file locks held on this system, from /proc/locks
// (see ParseLocks, whose error it returns with the locks it could read).
// It fails, returning no locks, when /proc/locks cannot be read.
func Locks() ([]Lock, error) {
	data, err := ReadFile("/proc/locks")
	if err != nil {
		return nil, err
	}
	return ParseLocks(data)
}
