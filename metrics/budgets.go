package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/governor-dev/governor/governor"
)

// BudgetSource reads a project's spend budgets; a *governor.Governor is
// one.
type BudgetSource interface {
	Project() string
	Budgets(ctx context.Context, names []string) ([]governor.BudgetState, time.Time, error)
}

var _ BudgetSource = (*governor.Governor)(nil)

// BudgetCollector exposes the spend budgets, read at scrape time:
// spent, reserved and limit (in units of the budget: micro-units /
// 1e6), overruns, the reset time, paused and held; and whether the read
// failed, always.
type BudgetCollector struct {
	src     BudgetSource
	timeout time.Duration

	spent, reserved, limit, overruns, reset, paused, held, open, readError *prometheus.Desc
}

// NewBudgetCollector returns the collector of src's budgets, each read
// bounded by timeout (0: DefaultTimeout).
func NewBudgetCollector(src BudgetSource, timeout time.Duration) *BudgetCollector {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	cl := prometheus.Labels{"project": src.Project()}
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, cl)
	}
	return &BudgetCollector{src: src, timeout: timeout,
		spent:     d("governor_budget_spent", "Settled spend in the budget's window in force, in the budget's unit.", "budget"),
		reserved:  d("governor_budget_reserved", "Estimates reserved and not settled yet, in the budget's unit.", "budget"),
		limit:     d("governor_budget_limit", "The budget's limit in force, in its unit.", "budget"),
		overruns:  d("governor_budget_overruns_total", "Calls whose actual cost was above their estimate.", "budget"),
		reset:     d("governor_budget_reset_timestamp_seconds", "When the budget's window in force ends.", "budget"),
		paused:    d("governor_budget_paused", "1 while an operator has paused the budget.", "budget"),
		held:      d("governor_budget_held", "1 while the budget is held after evidence of lost data.", "budget"),
		open:      d("governor_budget_open_reservations", "Reservations not settled yet.", "budget"),
		readError: d("governor_budget_read_error", "1 when the budgets could not be read at this scrape."),
	}
}

// Describe implements prometheus.Collector.
func (c *BudgetCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.spent, c.reserved, c.limit, c.overruns, c.reset, c.paused, c.held, c.open, c.readError} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *BudgetCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	sts, _, err := c.src.Budgets(ctx, nil)
	failed := 0.0
	if err != nil {
		failed = 1
	}
	ch <- prometheus.MustNewConstMetric(c.readError, prometheus.GaugeValue, failed)
	flag := func(s string) float64 {
		if s != "" {
			return 1
		}
		return 0
	}
	for _, s := range sts {
		g := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, s.Name)
		}
		g(c.spent, float64(s.Spent)/governor.MicroUnit)
		g(c.reserved, float64(s.Reserved)/governor.MicroUnit)
		g(c.limit, float64(s.Limit)/governor.MicroUnit)
		ch <- prometheus.MustNewConstMetric(c.overruns, prometheus.CounterValue, float64(s.Overruns), s.Name)
		if !s.End.IsZero() { // zero: the window ended and the next is not opened yet
			g(c.reset, float64(s.End.UnixMilli())/1000)
		}
		g(c.paused, flag(s.Paused))
		g(c.held, flag(s.Held))
		g(c.open, float64(s.Open))
	}
}

// Source is the source the collector reads.
func (c *Collector) Source() Source { return c.src }
