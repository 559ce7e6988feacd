//go:build !linux

package filebackend

// lockHolder is the process that holds an flock(2) on file f: macOS
// cannot tell (it has no /proc/locks, and fcntl(F_GETLK) sees only POSIX
// locks), so the holder is unknown.
func lockHolder(f fileID) LockHolder { return LockHolder{} }
