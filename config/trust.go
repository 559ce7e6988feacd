package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/user"
	"strconv"
	"strings"
	"syscall"
)

// ErrUntrusted is wrapped by the error of a file governor will not read
// because someone other than the user (or root) could have written it.
var ErrUntrusted = errors.New("config: untrusted file")

// maxTrustedFile bounds what ReadTrusted reads: a configuration is small.
const maxTrustedFile = 1 << 20

// ReadTrusted reads a file whose content decides what governor does (a
// config file, a --redis-url-file). As ssh does for its configuration, it
// reads the file only if it is a regular file owned by the effective user
// or by root and not writable by group or others; else it returns an
// error naming the file, its owner and mode and the fix, wrapping
// ErrUntrusted. A missing file is errors.Is fs.ErrNotExist.
//
// The checks are made on the opened file, so a file swapped between the
// check and the read is not read. A symbolic link is followed only if it
// too is owned by the user or root: another user's link would choose the
// file. The directories above the file are not checked: whoever can write
// them can replace the file, but not by one that passes the owner check.
//
// readers says who else may read it: anyone (a configuration), the
// owner's group (a secret a group shares), or nobody (a credential).
func ReadTrusted(path string, readers Readers) ([]byte, error) {
	euid := os.Geteuid()
	if li, err := os.Lstat(path); err == nil && li.Mode()&fs.ModeSymlink != 0 {
		if st, ok := li.Sys().(*syscall.Stat_t); ok && int(st.Uid) != euid && st.Uid != 0 {
			return nil, fmt.Errorf("%w: %s is a symbolic link owned by %s, not by you (%s) or root: another user chose the file it names; "+
				"remove it (rm %s) or replace it by a file of your own", ErrUntrusted, path, userName(int(st.Uid)), userName(euid), path)
		}
	}
	// O_NONBLOCK: a FIFO put in the file's place must not hang the open.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("config: cannot read %s: %w", path, unwrapPath(err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("config: cannot read %s: %w", path, unwrapPath(err))
	}
	if err := trusted(path, fi, euid, readers); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, maxTrustedFile+1))
	if err != nil {
		return nil, fmt.Errorf("config: cannot read %s: %w", path, unwrapPath(err))
	}
	if len(data) > maxTrustedFile {
		return nil, fmt.Errorf("config: %s is larger than %d bytes; it is not a configuration", path, maxTrustedFile)
	}
	return data, nil
}

// Readers says who beside its owner may read a file ReadTrusted reads.
type Readers int

const (
	// AnyReader: a file anyone may read (a configuration).
	AnyReader Readers = iota
	// GroupReaders: a secret the owner's group may share (a
	// --redis-url-file); others must not read it.
	GroupReaders
	// OwnerOnly: a credential nobody else may read (serve's
	// --admin-token-file).
	OwnerOnly
)

// trusted decides whether a file with fi may be read by user euid.
func trusted(path string, fi fs.FileInfo, euid int, readers Readers) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("config: %s is not a regular file (%s)", path, fi.Mode().Type())
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("%w: %s: its owner is unknown on this system", ErrUntrusted, path)
	}
	owner := int(st.Uid)
	perm := fi.Mode().Perm()
	switch {
	case owner != euid && owner != 0:
		return fmt.Errorf("%w: %s is owned by %s, not by you (%s) or root: another user could have written it; "+
			"if you trust its content, copy it to a file of your own (cp %s mine.yaml && governor --config mine.yaml …), "+
			"or have it owned by you (chown %s %s)",
			ErrUntrusted, path, userName(owner), userName(euid), path, userName(euid), path)
	case perm&0o022 != 0:
		return fmt.Errorf("%w: %s has mode %04o: writable by %s, who could change what governor does; fix: chmod go-w %s",
			ErrUntrusted, path, perm, writers(perm), path)
	case readers >= GroupReaders && perm&0o007 != 0:
		return fmt.Errorf("%w: %s has mode %04o: readable by every user, and it holds a secret; fix: chmod o-rwx %s",
			ErrUntrusted, path, perm, path)
	case readers == OwnerOnly && perm&0o070 != 0:
		return fmt.Errorf("%w: %s has mode %04o: readable by its group, and it holds a credential only its owner may read; fix: chmod 600 %s",
			ErrUntrusted, path, perm, path)
	}
	return nil
}

func writers(perm fs.FileMode) string {
	var who []string
	if perm&0o020 != 0 {
		who = append(who, "its group")
	}
	if perm&0o002 != 0 {
		who = append(who, "every user")
	}
	return strings.Join(who, " and ")
}

// userName is "name (uid N)", or "uid N" when the user has no name.
func userName(uid int) string {
	id := strconv.Itoa(uid)
	if u, err := user.LookupId(id); err == nil && u.Username != "" {
		return u.Username + " (uid " + id + ")"
	}
	return "uid " + id
}

// ReadURLFile reads a Redis URL from a file (--redis-url-file), so that
// its password is not on a command line, where every user sees it (ps).
// The file is read as ReadTrusted reads a private file: owned by the user
// or root, writable by no one else, readable by no one but the owner and
// group. It holds the URL alone; surrounding white space is dropped.
func ReadURLFile(path string) (string, error) {
	return readLine(path, GroupReaders, "the Redis URL", " (redis://[user:password@]host:port/db)")
}

// readLine reads path as ReadTrusted does with readers and returns the
// one line it holds, surrounding white space dropped. An empty file or
// one of several lines is an error saying to write what in it (how: an
// example appended to the first).
func readLine(path string, readers Readers, what, how string) (string, error) {
	data, err := ReadTrusted(path, readers)
	if err != nil {
		return "", err
	}
	line := strings.TrimSpace(string(data))
	switch {
	case line == "":
		return "", fmt.Errorf("config: %s is empty; write %s in it%s", path, what, how)
	case strings.ContainsAny(line, "\n\r"):
		return "", fmt.Errorf("config: %s holds several lines; write %s alone in it", path, what)
	}
	return line, nil
}

// MinTokenLen is the shortest admin token ReadTokenFile accepts: a token
// short enough to guess is no protection.
const MinTokenLen = 16

// ReadTokenFile reads the admin token of 'governor serve'
// (--admin-token-file), as ReadTrusted reads a credential: owned by the
// user or root, readable and writable by nobody else (chmod 600). The
// file holds the token alone, on one line, of at least MinTokenLen
// printable ASCII characters without spaces; surrounding white space is
// dropped.
func ReadTokenFile(path string) (string, error) {
	tok, err := readLine(path, OwnerOnly, "the admin token", fmt.Sprintf(" (e.g. head -c 32 /dev/urandom | base64 > %s)", path))
	if err != nil {
		return "", err
	}
	if len(tok) < MinTokenLen {
		return "", fmt.Errorf("config: the admin token in %s has %d characters; it needs at least %d (e.g. head -c 32 /dev/urandom | base64 > %s)", path, len(tok), MinTokenLen, path)
	}
	for _, c := range tok {
		if c <= ' ' || c > '~' {
			return "", fmt.Errorf("config: the admin token in %s holds %q; allowed: printable ASCII characters without spaces", path, c)
		}
	}
	return tok, nil
}
