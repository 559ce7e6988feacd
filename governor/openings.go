package governor

import (
	"context"
	"sync"
)

// openings hold a Governor's capacity gates or rate buckets: one value
// per resource, opened by its first user on a context of its own while
// later users wait for it, so that no one caller's end fails the others.
// A failed opening is dropped, so that the next use tries again. The
// zero value is ready to use.
type openings[L comparable, V interface{ Close() error }] struct {
	mu sync.Mutex
	m  map[string]*opening[L, V]
}

// opening is one resource's value, or its opening (ready not closed).
type opening[L comparable, V any] struct {
	limit L // what it was opened with
	ready chan struct{}
	v     V
	err   error
}

// get returns resource's value, opening it with open, asked with limit,
// on first use; a value opened with another limit is returned as it is,
// for the caller to refuse.
func (o *openings[L, V]) get(ctx context.Context, resource string, limit L, open func() (V, error)) (*opening[L, V], error) {
	o.mu.Lock()
	if o.m == nil {
		o.m = map[string]*opening[L, V]{}
	}
	s := o.m[resource]
	if s == nil {
		s = &opening[L, V]{limit: limit, ready: make(chan struct{})}
		o.m[resource] = s
		o.mu.Unlock()
		s.v, s.err = open()
		close(s.ready)
		if s.err != nil {
			o.mu.Lock()
			delete(o.m, resource) // the next use tries again
			o.mu.Unlock()
		}
	} else {
		o.mu.Unlock()
	}
	select {
	case <-s.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if s.err != nil {
		return nil, s.err
	}
	return s, nil
}

// opened returns resource's value if it is open now (not while it is
// being opened, nor after a failed opening).
func (o *openings[L, V]) opened(resource string) (v V, ok bool) {
	o.mu.Lock()
	s := o.m[resource]
	o.mu.Unlock()
	if s == nil {
		return v, false
	}
	select {
	case <-s.ready:
		return s.v, s.err == nil
	default:
		return v, false
	}
}

// close closes every value opened, after its opening ends; the first
// error is returned.
func (o *openings[L, V]) close() error {
	o.mu.Lock()
	m := o.m
	o.m = nil
	o.mu.Unlock()
	var first error
	for _, s := range m {
		<-s.ready
		if s.err == nil {
			if err := s.v.Close(); err != nil && first == nil {
				first = err
			}
		}
	}
	return first
}
