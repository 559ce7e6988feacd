package statuspage

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/words"
	"github.com/governor-dev/governor/metrics"
)

// NewReopening returns the source of project that open opens.
func NewReopening(project string, open func(context.Context) (*governor.Governor, error)) *Reopening {
	return &Reopening{project: project, open: open}
}

// Reopening is the metrics source of serve: a Governor opened on first use,
// and again on a later use while opening fails, so that serve can start
// before its Redis does.
type Reopening struct {
	project string
	open    func(context.Context) (*governor.Governor, error)

	mu sync.Mutex
	g  *governor.Governor
}

var _ metrics.RateSource = (*Reopening)(nil)

// Governor returns the Governor, opening it if it is not yet.
func (r *Reopening) Governor(ctx context.Context) (*governor.Governor, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.g == nil {
		g, err := r.open(ctx)
		if err != nil {
			return nil, err
		}
		r.g = g
	}
	return r.g, nil
}

func (r *Reopening) Project() string { return r.project }

// do runs f on the Governor, opening it if it is not yet; an open that
// fails is the error, and f does not run.
func (r *Reopening) do(ctx context.Context, f func(*governor.Governor) error) error {
	g, err := r.Governor(ctx)
	if err != nil {
		return err
	}
	return f(g)
}

// call is do for a call that returns a value: the zero T when the open
// fails.
func call[T any](ctx context.Context, r *Reopening, f func(*governor.Governor) (T, error)) (v T, err error) {
	err = r.do(ctx, func(g *governor.Governor) error {
		v, err = f(g)
		return err
	})
	return v, err
}

func (r *Reopening) Resources(ctx context.Context) ([]string, error) {
	return call(ctx, r, func(g *governor.Governor) ([]string, error) { return g.Resources(ctx) })
}

func (r *Reopening) Status(ctx context.Context, resource string) (governor.Status, error) {
	return call(ctx, r, func(g *governor.Governor) (governor.Status, error) { return g.Status(ctx, resource) })
}

func (r *Reopening) Events(ctx context.Context, resource string, since time.Time) ([]governor.Event, error) {
	return call(ctx, r, func(g *governor.Governor) ([]governor.Event, error) { return g.Events(ctx, resource, since) })
}

var _ Admin = (*Reopening)(nil)

func (r *Reopening) Cancel(ctx context.Context, resource string, sel governor.CancelSelector, by string) ([]governor.Waiter, error) {
	return call(ctx, r, func(g *governor.Governor) ([]governor.Waiter, error) { return g.Cancel(ctx, resource, sel, by) })
}

func (r *Reopening) Pause(ctx context.Context, resource, by string) error {
	return r.do(ctx, func(g *governor.Governor) error { return g.Pause(ctx, resource, by) })
}

func (r *Reopening) Resume(ctx context.Context, resource, by string) error {
	return r.do(ctx, func(g *governor.Governor) error { return g.Resume(ctx, resource, by) })
}

func (r *Reopening) SetLimit(ctx context.Context, resource string, limit int, by string) error {
	return r.do(ctx, func(g *governor.Governor) error { return g.SetLimit(ctx, resource, limit, by) })
}

func (r *Reopening) Rates(ctx context.Context) ([]string, error) {
	return call(ctx, r, func(g *governor.Governor) ([]string, error) { return g.Rates(ctx) })
}

func (r *Reopening) RateStatus(ctx context.Context, name string) (governor.RateStatus, error) {
	return call(ctx, r, func(g *governor.Governor) (governor.RateStatus, error) { return g.RateStatus(ctx, name) })
}

// Budgets reads the project's spend budgets (view.BudgetSource,
// metrics.BudgetSource).
func (r *Reopening) Budgets(ctx context.Context, names []string) ([]governor.BudgetState, time.Time, error) {
	var now time.Time
	sts, err := call(ctx, r, func(g *governor.Governor) ([]governor.BudgetState, error) {
		sts, n, err := g.Budgets(ctx, names)
		now = n
		return sts, err
	})
	return sts, now, err
}

// BudgetEvents reads the project's spend budget events
// (view.BudgetEventSource).
func (r *Reopening) BudgetEvents(ctx context.Context) ([]governor.BudgetEvent, error) {
	return call(ctx, r, func(g *governor.Governor) ([]governor.BudgetEvent, error) { return g.BudgetEvents(ctx) })
}

// MinRetention is the least --resources-retention serve takes. Forgetting
// a resource erases its events, admin actions included, and any user of the
// backend can run serve: a floor of hours keeps a week-end's record of who
// cancelled, paused or took over from being wiped by a serve started with a
// retention of a second. (The library's floor, governor.MinRetention, is
// what correctness needs; this one is what an audit trail needs.)
const MinRetention = time.Hour

// ValidateRetention checks serve's --resources-retention: at least
// MinRetention.
func ValidateRetention(d time.Duration) error {
	if d < MinRetention {
		return fmt.Errorf("%v; allowed: %v or more (default %v): forgetting an idle resource erases its events, admin actions included", d, MinRetention, governor.DefaultRetention)
	}
	return governor.ValidateRetention(d)
}

// Sweep forgets idle resources every sweepInterval until ctx
// ends, saying on stderr when a sweep fails; a backend that does not
// answer is tried again at the next turn.
func (r *Reopening) Sweep(ctx context.Context, retention, timeout time.Duration, stderr io.Writer) {
	t := time.NewTicker(sweepInterval(retention))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		sctx, cancel := context.WithTimeout(ctx, max(timeout, sweepInterval(retention)))
		if g, err := r.Governor(sctx); err == nil {
			if _, err := g.ForgetIdle(sctx, retention); err != nil && ctx.Err() == nil {
				fmt.Fprintf(stderr, "governor: forgetting idle resources: %v\n", words.Message(err))
			}
		}
		cancel()
	}
}

// Close closes the Governor if one was opened.
func (r *Reopening) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.g != nil {
		_ = r.g.Close()
	}
}

// sweepInterval is how often governor serve calls ForgetIdle for
// retention: a quarter of it, between a tenth of a second and an hour. A
// resource is then forgotten between retention and retention plus this
// after it was last found busy.
func sweepInterval(retention time.Duration) time.Duration {
	return min(max(retention/4, 100*time.Millisecond), time.Hour)
}
