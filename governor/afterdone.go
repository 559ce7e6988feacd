package governor

import "slices"

// afterDone is a function AfterDone registered.
type afterDone struct{ f func() }

// AfterDone arranges for f to run in its own goroutine once the lease is
// done (Done closes: lost, released or detached), as context.AfterFunc
// does for a context, with no goroutine waiting meanwhile: a process
// that watches many leases for loss pays nothing per lease until one
// ends. If the lease is done already, f starts at once. Calling stop
// unregisters f; stop reports whether it did so before f was started
// (false: f has started, or stop was called already).
func (l *Lease) AfterDone(f func()) (stop func() bool) {
	a := &afterDone{f: f}
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-l.done:
		go f()
		return func() bool { return false }
	default:
	}
	l.after = append(l.after, a)
	return func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		i := slices.Index(l.after, a)
		if i < 0 {
			return false
		}
		l.after = slices.Delete(l.after, i, i+1)
		return true
	}
}

// closeDone closes Done and starts what AfterDone registered. l.mu is
// held: AfterDone sees the lease done, or registers before this runs.
func (l *Lease) closeDone() {
	close(l.done)
	for _, a := range l.after {
		go a.f()
	}
	l.after = nil
}
