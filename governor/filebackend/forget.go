package filebackend

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/governor-dev/governor/governor"
)

// Forget implements governor.Backend. It removes the state file and
// leaves the directory and its lock file, which are never unlinked (a
// process may be waiting for the lock); Resources lists only
// directories with a state file.
func (b *Backend) Forget(ctx context.Context, key governor.Key, retention time.Duration) (bool, error) {
	if isSeq(key.Resource) && !b.isClosed() {
		return false, nil // a sequence's or rate limit's state: kept
	}
	return within(ctx, b, key, section{}, func(t *tx) (bool, error) {
		if !t.hasState() {
			return false, nil // forgotten already, or never written
		}
		t.settle()
		return t.forgetIdle(retention)
	})
}

// forgetIdle removes the state file of a resource idle for retention,
// marking when it became idle first.
func (t *tx) forgetIdle(retention time.Duration) (bool, error) {
	st := t.st
	// A paused resource, one with a live limit (admin.go), one cooling
	// off (forgetting it would end the cool-off) or one leased (a live
	// capacity lease, wanting nothing or not) is kept.
	if len(st.Holders) > 0 || len(st.Waiters) > 0 || st.Paused != nil || st.Live != nil || t.coolingOff() || t.leased() {
		if st.Idle != nil {
			st.Idle = nil
			t.dirty = true
		}
		return false, t.commit()
	}
	// The mark is on the boot clock, as expiries are; one of an earlier
	// boot only ever looks younger than it is.
	if m := st.Idle; m == nil || m.Token != st.Token || m.Waited != st.Counters.Waited || m.Since > t.now.boot {
		st.Idle = &idleMark{Token: st.Token, Waited: st.Counters.Waited, Since: t.now.boot}
		t.dirty = true
		return false, t.commit()
	}
	// The next grant's token is at least the wall clock in µs: above
	// the last one if that lies behind the clock.
	if time.Duration(t.now.boot-st.Idle.Since) < retention || st.Token >= t.now.wall.UnixMicro() {
		return false, t.commit()
	}
	// The statistics first: a state file is what makes a resource, and
	// statistics without one are never read.
	for _, name := range []string{statsName, stateName} {
		if err := unix.Unlinkat(t.dir, name, 0); err != nil && err != unix.ENOENT {
			return false, fmt.Errorf("governor: file backend: forget %s: %w", t.b.resourceFile(t.key, name), err)
		}
	}
	t.removeLeftovers()
	return true, nil
}

// hasState tells whether the resource has a state file (load makes a new
// state when it has none). The caller holds the lock.
func (t *tx) hasState() bool {
	var fi unix.Stat_t
	return unix.Fstatat(t.dir, stateName, &fi, unix.AT_SYMLINK_NOFOLLOW) != unix.ENOENT
}

// leased tells whether a capacity lease of the resource is live.
func (t *tx) leased() bool {
	for _, w := range t.st.Wants {
		if w.Expires > t.now.boot {
			return true
		}
	}
	return false
}
