//go:build linux || darwin

package supervise

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// lookPath finds the executable for name the way a shell does: a name with a
// slash is used as is (relative to dir, where the child will run), any other
// name is searched in path. It returns ErrNotFound when nothing by that name
// exists, and ErrNotExecutable when something exists but none can be run.
func lookPath(name, path, dir string) (string, error) {
	if name == "" {
		return "", fmt.Errorf("%w: empty command name", ErrNotFound)
	}
	if strings.Contains(name, "/") {
		if err := checkExecutable(inDir(dir, name)); err != nil {
			return "", lookError(name, err)
		}
		return name, nil
	}
	var first error
	for _, d := range filepath.SplitList(path) {
		if d == "" {
			d = "." // shell semantics: an empty element is the current directory
		}
		p := filepath.Join(d, name)
		err := checkExecutable(inDir(dir, p))
		if err == nil {
			return p, nil
		}
		if first == nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			first = err // found, but not runnable: keep looking, like a shell
		}
	}
	if first != nil {
		return "", lookError(name, first)
	}
	return "", fmt.Errorf("%w: %s", ErrNotFound, name)
}

// inDir resolves a relative path against the child's working directory,
// because the child changes into dir before it executes the path.
func inDir(dir, p string) string {
	if dir == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}

func checkExecutable(p string) error {
	st, err := os.Stat(p)
	if err != nil {
		return err
	}
	if st.IsDir() {
		return syscall.EISDIR
	}
	err = unix.Faccessat(unix.AT_FDCWD, p, unix.X_OK, unix.AT_EACCESS)
	if err == unix.ENOSYS || err == unix.EPERM {
		// No faccessat2, or a seccomp filter: fall back to the mode bits.
		if st.Mode()&0o111 != 0 {
			return nil
		}
		return fs.ErrPermission
	}
	return err
}

func lookError(name string, err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return fmt.Errorf("%w: %s", ErrNotFound, name)
	}
	return fmt.Errorf("%w: %s: %w", ErrNotExecutable, name, err)
}

// execError classifies an error of execve(2) reported by the child, after
// lookPath had found path.
func execError(name, path, dir string, err error) error {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return fmt.Errorf("supervise: starting %s: %w", name, err)
	}
	switch errno {
	case syscall.ENOENT, syscall.ENOTDIR:
		if _, serr := os.Stat(inDir(dir, path)); serr != nil {
			return fmt.Errorf("%w: %s", ErrNotFound, name) // removed since the lookup
		}
		// The file is there, so the interpreter of a script is not.
		return fmt.Errorf("%w: %s: bad interpreter: %w", ErrNotExecutable, name, err)
	case syscall.EACCES, syscall.EPERM, syscall.ENOEXEC, syscall.EISDIR,
		syscall.ETXTBSY, syscall.E2BIG, syscall.ELOOP, syscall.ENAMETOOLONG:
		return fmt.Errorf("%w: %s: %w", ErrNotExecutable, name, err)
	}
	if slices.Contains(badExecutable, errno) {
		return fmt.Errorf("%w: %s: %w", ErrNotExecutable, name, err)
	}
	return fmt.Errorf("supervise: starting %s: %w", name, err)
}

// getenv returns the last value of key in env.
func getenv(env []string, key string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok {
			return v, true
		}
	}
	return "", false
}
