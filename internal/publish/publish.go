package publish

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/governor-dev/governor/governor"
)

// ErrExists reports a destination that already exists: nothing was
// published and the destination is untouched.
var ErrExists = errors.New("publish: destination exists")

// Method is how the destination was put in place.
type Method string

const (
	// MethodLink: link(2), which never replaces an existing file.
	MethodLink Method = "link"
	// MethodRenameNoReplace: no hard links here; an atomic rename that
	// refuses an existing destination (Linux RENAME_NOREPLACE, macOS
	// RENAME_EXCL).
	MethodRenameNoReplace Method = "rename-noreplace"
	// MethodRenameChecked: neither is supported; the destination was
	// checked absent, then renamed over. A writer racing in between would
	// have been overwritten.
	MethodRenameChecked Method = "rename-checked"
)

// DefaultMode is the permission of a published file when Options.Mode is
// zero (before the umask), as os.Create uses.
const DefaultMode fs.FileMode = 0o666

// Options adjust a publish. The zero value publishes with DefaultMode and
// no lease check.
type Options struct {
	// Mode is the permission of the destination, before the umask; zero
	// means DefaultMode (File: the source's permission).
	Mode fs.FileMode
	// Lease, if set, must still be held just before the destination is
	// put in place, or nothing is published.
	Lease *Lease

	sys sys // the system calls; tests replace them
}

// Lease names the lease a publish requires, and the Governor that asks the
// backend about it.
type Lease struct {
	Governor *governor.Governor
	Resource string
	ID       string
}

// Result says what a publish did.
type Result struct {
	Method Method
	Bytes  int64
	// Stale are the abandoned temporary files of dead publishers that
	// were removed from the destination's directory.
	Stale []string
}

// sys is the set of system calls a publish makes that the tests replace
// to simulate a file system without hard links.
type sys struct {
	link            func(oldname, newname string) error
	renameNoReplace func(oldname, newname string) error
}

func (s sys) withDefaults() sys {
	if s.link == nil {
		s.link = os.Link
	}
	if s.renameNoReplace == nil {
		s.renameNoReplace = renameNoReplace
	}
	return s
}

// File publishes the content of the file src at dst (see the package
// documentation). Without Options.Mode, dst gets the permission bits of
// src when it is a regular file (a pipe, such as <(cmd), gets
// DefaultMode).
// On success dst is the complete, durable copy of src; on failure dst is
// untouched (absent, or what was there: ErrExists) and no temporary file
// of this call is left.
func File(ctx context.Context, src, dst string, o Options) (Result, error) {
	f, err := os.Open(src)
	if err != nil {
		return Result{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Result{}, err
	}
	if fi.IsDir() {
		return Result{}, fmt.Errorf("source %s is a directory; allowed: a file, a pipe, or - for standard input", src)
	}
	if o.Mode == 0 && fi.Mode().IsRegular() {
		o.Mode = fi.Mode().Perm() // 0 (no permission bits at all) still means DefaultMode
	}
	return Publish(ctx, f, dst, o)
}

// Publish publishes what src yields at dst (see the package
// documentation): the error wraps ErrExists when dst exists,
// governor.ErrLeaseLost when Options.Lease is no longer held, and
// ctx.Err() when ctx ends first. On failure dst is untouched and no
// temporary file of this call is left; on success dst is complete and
// durable (file and directory fsynced). Either way, Result.Stale lists the
// abandoned temporary files removed from dst's directory.
func Publish(ctx context.Context, src io.Reader, dst string, o Options) (res Result, err error) {
	s := o.sys.withDefaults()
	if dst == "" {
		return res, errors.New("publish: empty destination; allowed: a path whose directory exists")
	}
	dir := filepath.Dir(dst)
	res.Stale = removeStale(dir)
	if _, err := os.Lstat(dst); err == nil {
		return res, fmt.Errorf("%s: %w (not overwritten)", dst, ErrExists)
	}

	mode := o.Mode.Perm()
	if o.Mode == 0 {
		mode = DefaultMode
	}
	tmp, err := createTemp(dir, mode)
	if err != nil {
		return res, fmt.Errorf("publish %s: %w", dst, err)
	}
	tmpName := tmp.Name()
	remove := true // until the name is gone: renamed, or removed below
	defer func() {
		tmp.Close()
		if remove {
			_ = os.Remove(tmpName)
		}
	}()
	res.Bytes, err = io.Copy(tmp, &ctxReader{ctx, src})
	if err != nil {
		return res, fmt.Errorf("publish %s: writing %s: %w", dst, tmpName, err)
	}
	if err := tmp.Sync(); err != nil {
		return res, fmt.Errorf("publish %s: fsync %s: %w", dst, tmpName, err)
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	if o.Lease != nil {
		if err := o.Lease.check(ctx); err != nil {
			return res, err
		}
	}
	res.Method, err = place(s, tmpName, dst)
	if err != nil {
		return res, err
	}
	if res.Method == MethodLink {
		// Removed before the directory's fsync, which then makes both the
		// new name and the removal durable.
		_ = os.Remove(tmpName)
	}
	remove = false
	if err := syncDir(dir); err != nil {
		return res, fmt.Errorf("published %s, but fsync of its directory failed: %w", dst, err)
	}
	return res, nil
}

// place puts tmp at dst without replacing an existing dst, by the first
// way the file system supports.
func place(s sys, tmp, dst string) (Method, error) {
	err := s.link(tmp, dst)
	switch {
	case err == nil:
		return MethodLink, nil
	case errors.Is(err, fs.ErrExist):
		return "", fmt.Errorf("%s: %w (not overwritten)", dst, ErrExists)
	case !unsupported(err):
		return "", fmt.Errorf("publish %s: %w", dst, err)
	}
	err = s.renameNoReplace(tmp, dst)
	switch {
	case err == nil:
		return MethodRenameNoReplace, nil
	case errors.Is(err, fs.ErrExist):
		return "", fmt.Errorf("%s: %w (not overwritten)", dst, ErrExists)
	case !unsupported(err) && !errors.Is(err, syscall.EINVAL):
		return "", fmt.Errorf("publish %s: %w", dst, err)
	}
	// The window between this check and the rename is the one thing this
	// fallback cannot close.
	if _, err := os.Lstat(dst); err == nil {
		return "", fmt.Errorf("%s: %w (not overwritten)", dst, ErrExists)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("publish %s: %w", dst, err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		return "", fmt.Errorf("publish %s: %w", dst, err)
	}
	return MethodRenameChecked, nil
}

// unsupported reports an error of a file system that lacks the operation
// (hard links on exFAT: EPERM on Linux, ENOTSUP on macOS).
func unsupported(err error) bool {
	return errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.ENOTSUP) ||
		errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOSYS)
}

// check refuses a lease the backend no longer lists.
func (l *Lease) check(ctx context.Context) error {
	_, err := l.Governor.Held(ctx, l.Resource, l.ID)
	switch {
	case errors.Is(err, governor.ErrNotHeld):
		return fmt.Errorf("lease %s@%s is not held (expired, released or taken over); nothing published: %w", l.Resource, l.ID, governor.ErrLeaseLost)
	case err != nil:
		return fmt.Errorf("checking lease %s@%s: %w", l.Resource, l.ID, err)
	}
	return nil
}

// syncDir fsyncs a directory. File systems that cannot (EINVAL, ENOTSUP)
// have nothing more to make durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOTSUP) {
		return err
	}
	return nil
}

// ctxReader ends a copy when ctx ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
