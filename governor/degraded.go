package governor

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strconv"
	"strings"
	"time"

	"github.com/governor-dev/governor/governor/eventkind"
)

// BackendDown is a provider's degraded-mode policy, what its calls do
// while the backend cannot be reached (providers.NAME.on_backend_down:
// closed | open | local:N). The zero value is closed: calls wait for the
// backend, or fail; no call runs unaccounted.
type BackendDown struct {
	// Open lets every call through and counts them.
	Open bool
	// Local, 1 to MaxLimit, lets Local calls at once through in this
	// process: the fleet's overshoot is at most Local × processes.
	Local int
}

// closed tells the default policy: no call without the backend.
func (d BackendDown) closed() bool { return !d.Open && d.Local == 0 }

// ParseBackendDown reads "closed", "open" or "local:N" (N 1 to
// MaxLimit); anything else is ErrInvalid naming what is allowed.
func ParseBackendDown(s string) (BackendDown, error) {
	switch s {
	case "", "closed":
		return BackendDown{}, nil
	case "open":
		return BackendDown{Open: true}, nil
	}
	if n, ok := strings.CutPrefix(s, "local:"); ok {
		if v, err := strconv.Atoi(n); err == nil && v >= 1 && v <= MaxLimit {
			return BackendDown{Local: v}, nil
		}
	}
	return BackendDown{}, invalid("on_backend_down %q; allowed: closed, open, local:N (N 1 to %d calls at once per process)", s, MaxLimit)
}

func (d BackendDown) String() string {
	switch {
	case d.Open:
		return "open"
	case d.Local != 0:
		return "local:" + strconv.Itoa(d.Local)
	}
	return "closed"
}

// degraded is a provider's degraded state in this process.
type degraded struct {
	since  time.Time // zero: not degraded
	passed int64     // calls let through since
	local  chan struct{}
}

// degradedProbe bounds the backend call that checks, while degraded,
// whether the backend is back.
const degradedProbe = 500 * time.Millisecond

// Degraded reports the resources whose provider calls run without the
// backend in this process (BackendDown open or local:N), with since when.
func (g *Governor) Degraded() map[string]time.Time {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := map[string]time.Time{}
	for r, d := range g.down {
		if !d.since.IsZero() {
			out[r] = d.since
		}
	}
	return out
}

// logf says something loud about degraded mode: Options.Log, else the
// standard logger.
func (g *Governor) logf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if g.log != nil {
		g.log(msg)
		return
	}
	log.Print(msg)
}

// isDown tells a failure to reach the backend (that retrying may cure)
// from bad input, a backend error and the caller's own end.
func isDown(ctx context.Context, err error) bool {
	return err != nil && ctx.Err() == nil && !isFinal(err) && !errors.Is(err, context.Canceled) &&
		!errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, ErrBusy)
}

// enterDegraded marks resource degraded (once, said loudly) and returns
// its state.
func (g *Governor) enterDegraded(resource string, pol BackendDown, cause error) *degraded {
	g.mu.Lock()
	if g.down == nil {
		g.down = map[string]*degraded{}
	}
	d := g.down[resource]
	if d == nil {
		d = &degraded{}
		g.down[resource] = d
	}
	if pol.Local > 0 && cap(d.local) != pol.Local {
		d.local = make(chan struct{}, pol.Local)
	}
	entered := d.since.IsZero()
	if entered {
		d.since, d.passed = time.Now(), 0
	}
	g.mu.Unlock()
	if entered {
		g.logf("governor: %s: DEGRADED: the backend cannot be reached (%v); on_backend_down %s: calls go on without it", resource, cause, pol)
		if g.onDegraded != nil {
			g.onDegraded(resource, true)
		}
	}
	return d
}

// leaveDegraded ends resource's degraded period, if any: said loudly, and
// recorded as an event in the backend.
func (g *Governor) leaveDegraded(ctx context.Context, resource string, pol BackendDown) {
	g.mu.Lock()
	d := g.down[resource]
	if d == nil || d.since.IsZero() {
		g.mu.Unlock()
		return
	}
	since, passed := d.since, d.passed
	d.since = time.Time{}
	g.mu.Unlock()
	detail := fmt.Sprintf("session %s ran without the backend for %v (on_backend_down %s): %d calls let through",
		g.decl.Session, time.Since(since).Round(time.Millisecond), pol, passed)
	g.logf("governor: %s: the backend is back: %s", resource, detail)
	if g.onDegraded != nil {
		g.onDegraded(resource, false)
	}
	_ = g.b.Record(ctx, Key{g.project, resource}, Event{Kind: eventkind.Degraded, Detail: detail})
}

// isDegraded tells whether resource is degraded in this process.
func (g *Governor) isDegraded(resource string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	d := g.down[resource]
	return d != nil && !d.since.IsZero()
}

// runDegraded runs fn without the backend, as pol allows: open at once,
// local:N once one of this process's N places is free.
func (g *Governor) runDegraded(ctx context.Context, d *degraded, pol BackendDown, fn func(ctx context.Context) (int64, error)) (int64, error) {
	if pol.Local > 0 {
		select {
		case d.local <- struct{}{}:
			defer func() { <-d.local }()
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	g.mu.Lock()
	d.passed++
	g.mu.Unlock()
	return fn(ctx)
}
