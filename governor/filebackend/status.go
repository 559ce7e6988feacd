package filebackend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/governor-dev/governor/governor"
)

// Status implements governor.Backend. It reads without locking: the
// state file is replaced atomically, so it is always whole.
func (b *Backend) Status(ctx context.Context, key governor.Key) (governor.Status, error) {
	st, err := b.read(ctx, key)
	if errors.Is(err, governor.ErrClosed) {
		return governor.Status{}, err
	}
	if err != nil || st == nil {
		return governor.Status{Key: key, Now: b.now().wall}, err
	}
	s := st.status(key, b.now(), b.boot, -1)
	s.Histograms = b.histograms(key, st)
	return s, nil
}

// read is peek for the lockless reads: it fails on a closed Backend or a
// done ctx.
func (b *Backend) read(ctx context.Context, key governor.Key) (*state, error) {
	if b.isClosed() {
		return nil, governor.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return b.peek(key)
}

// peek reads key's state without locking (the state file is replaced
// atomically, so it is always whole): nil when key has no state.
func (b *Backend) peek(key governor.Key) (*state, error) {
	dir, err := b.openResource(key.Project, key.Resource, false)
	if errors.Is(err, errNoState) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer unix.Close(dir)
	return b.load(dir, key)
}

// Resources implements governor.Backend: the resources of project that
// have a state file, sorted.
func (b *Backend) Resources(ctx context.Context, project string) ([]string, error) {
	all, err := b.list(ctx, project)
	if err != nil {
		return nil, err
	}
	names := all[:0]
	for _, n := range all {
		if !isSeq(n) {
			names = append(names, n)
		}
	}
	return names, nil
}

// list returns every name of project that has a state file, sorted:
// resources, and the pseudo-resources of sequences and rate limits.
func (b *Backend) list(ctx context.Context, project string) ([]string, error) {
	if b.isClosed() {
		return nil, governor.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	root, err := b.openRoot()
	if err != nil {
		return nil, err
	}
	defer unix.Close(root)
	proj, err := openat(root, escape(project), unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err == unix.ENOENT {
		return nil, nil
	}
	if err != nil {
		return nil, b.dirError(b.projectPath(project), err)
	}
	f := os.NewFile(uintptr(proj), b.projectPath(project))
	defer f.Close()
	entries, err := f.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("governor: file backend: list %s: %w", b.projectPath(project), err)
	}
	var names []string
	for _, e := range entries {
		dir, err := openat(proj, e, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			continue // not a resource directory
		}
		name, ok := unescape(e)
		if !ok && strings.HasPrefix(e, hashPrefix) {
			// A hashed name: the state file tells the real one.
			data, err := readFile(dir, stateName)
			var st state
			if err == nil {
				err = json.Unmarshal(data, &st)
			}
			if err == nil && (st.Project != project || escape(st.Resource) != e) {
				err = errors.New("it names another resource")
			}
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				unix.Close(dir)
				return nil, fmt.Errorf("%w: %s/%s/%s: %v; move the directory aside if it is not governor's",
					ErrCorrupt, b.projectPath(project), e, stateName, err)
			}
			name, ok = st.Resource, err == nil
		} else if ok {
			var s unix.Stat_t
			ok = unix.Fstatat(dir, stateName, &s, unix.AT_SYMLINK_NOFOLLOW) == nil
		}
		unix.Close(dir)
		if ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names, nil
}
