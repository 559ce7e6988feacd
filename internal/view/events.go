package view

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/governor-dev/governor/governor"
)

// Event is one event in the stable --json schema of 'governor
// events', which /api/v1/events of 'governor serve' serves too.
type Event struct {
	At       time.Time `json:"at"`
	Resource string    `json:"resource"`
	Kind     string    `json:"kind"`
	LeaseID  string    `json:"lease_id"`
	Token    int64     `json:"token"`
	Detail   string    `json:"detail"`
	// By names who acted, for an admin action's event (cancelled,
	// paused, resumed, limit).
	By string `json:"by,omitempty"`
}

// EventSource reads events: a *governor.Governor, or serve's reopening one.
type EventSource interface {
	Resources(ctx context.Context) ([]string, error)
	Events(ctx context.Context, resource string, since time.Time) ([]governor.Event, error)
}

// BudgetEventSource reads a project's spend budget events; a
// *governor.Governor is one.
type BudgetEventSource interface {
	BudgetEvents(ctx context.Context) ([]governor.BudgetEvent, error)
}

// BudgetPrefix names a spend budget among the resources of an event
// listing: budget:NAME (a budget's name holds no '/', a resource's
// events never carry this prefix).
const BudgetPrefix = "budget:"

// ReadEvents returns the events of the resources names (every resource
// with state when none is named) at or after from, oldest first, and,
// from a BudgetEventSource, those of the spend budgets named budget:NAME
// among names (every budget when none is named), as resource
// budget:NAME. One
// resource whose events cannot be read does not hide the others': the
// error then names each such resource, beside the rows that were read.
// When nothing could be listed at all, rows is nil.
func ReadEvents(ctx context.Context, src EventSource, names []string, from time.Time) ([]Event, error) {
	names = unique(names)
	all := len(names) == 0
	if all {
		var err error
		if names, err = src.Resources(ctx); err != nil {
			return nil, err
		}
	}
	rows := []Event{}
	var failed []error
	var budgets []string
	for _, n := range names {
		if b, ok := strings.CutPrefix(n, BudgetPrefix); ok && !all {
			budgets = append(budgets, b)
			continue
		}
		evs, err := src.Events(ctx, n, from)
		if err != nil {
			failed = append(failed, fmt.Errorf("events of %s: %w", n, err))
			continue
		}
		for _, e := range evs {
			rows = append(rows, Event{e.At.UTC(), n, e.Kind, e.LeaseID, e.Token, e.Detail, e.By})
		}
	}
	if bs, ok := src.(BudgetEventSource); ok && (all || len(budgets) > 0) {
		evs, err := bs.BudgetEvents(ctx)
		if err != nil {
			failed = append(failed, fmt.Errorf("budget events: %w", err))
		}
		for _, e := range evs {
			if !e.At.Before(from) && (all || slices.Contains(budgets, e.Budget)) {
				rows = append(rows, Event{At: e.At.UTC(), Resource: BudgetPrefix + e.Budget, Kind: e.Kind, LeaseID: e.Lease, Detail: e.Detail, By: e.By})
			}
		}
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].At.Before(rows[j].At) })
	return rows, errors.Join(failed...)
}

// Since is the start of the past duration s ("1h", "90s") before now,
// the one rule for 'governor events --since' and /api/v1/events?since=:
// a positive Go duration; "" is the zero time (every event kept).
func Since(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return time.Time{}, fmt.Errorf("since=%q; allowed: a positive duration such as 90s, 1h", s)
	}
	return now.Add(-d), nil
}

// WriteEvents writes the table of 'governor events' for rows.
func WriteEvents(w io.Writer, rows []Event) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tRESOURCE\tEVENT\tLEASE\tTOKEN\tDETAIL")
	for _, r := range rows {
		detail := Dash(r.Detail)
		if r.By != "" {
			detail += "; by " + Dash(r.By)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", r.At.Local().Format("2006-01-02 15:04:05"), Dash(r.Resource), Dash(r.Kind), Dash(r.LeaseID), r.Token, detail)
	}
	return tw.Flush()
}
