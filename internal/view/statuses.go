package view

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/nearest"
	"github.com/governor-dev/governor/internal/words"
)

// StatusSource reads resources' state: a *governor.Governor, or serve's
// reopening one.
type StatusSource interface {
	Project() string
	Resources(ctx context.Context) ([]string, error)
	Status(ctx context.Context, resource string) (governor.Status, error)
}

// Statuses reads the named resources, or every resource with state plus
// every one limits configures (configured limits by name), each once. A resource
// never used yet shows its configured limit. A name neither configured
// nor with state is an UnknownResourceError (but for a rate key of g,
// when g is a RateSource: not read here, RateShares shows it); nothing
// is read then. A
// resource whose state the backend answers with an error for (one key of
// the wrong type) does not hide the others: they are returned with an
// *UnreadableError naming it.
func Statuses(ctx context.Context, g StatusSource, names []string, limits map[string]int) ([]governor.Status, error) {
	have, err := g.Resources(ctx)
	if err != nil {
		return nil, err
	}
	known := map[string]bool{}
	for _, n := range have {
		known[n] = true
	}
	for n := range limits {
		known[n] = true
	}
	all := make([]string, 0, len(known))
	for n := range known {
		all = append(all, n)
	}
	sort.Strings(all)
	names = unique(names)
	if len(names) == 0 {
		names = all
	}
	rates, err := rateKeys(ctx, g, names, known)
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		if !known[n] && !rates[n] {
			return nil, unknownResource(g.Project(), n, all)
		}
	}
	out := make([]governor.Status, 0, len(names))
	var bad []Unreadable
	for _, n := range names {
		if !known[n] {
			continue // a rate key alone (RateShares shows it)
		}
		st, err := g.Status(ctx, n)
		if errors.Is(err, governor.ErrBackend) {
			// The backend answered, with an error about this resource's
			// state (a key of the wrong type, a corrupt file): the
			// others are still readable.
			bad = append(bad, Unreadable{Resource: n, Error: words.Message(err)})
			continue
		}
		if err != nil {
			return nil, err
		}
		if st.Limit == 0 {
			st.Limit = limits[n] // never used yet: show the configured limit
		}
		out = append(out, st)
	}
	if bad != nil {
		return out, &UnreadableError{Resources: bad}
	}
	return out, nil
}

// rateKeys are the rate keys of g (a RateSource) when names has one
// that known lacks: a rate-only provider named is not unknown.
func rateKeys(ctx context.Context, g StatusSource, names []string, known map[string]bool) (map[string]bool, error) {
	rs, ok := g.(RateSource)
	if !ok || !slices.ContainsFunc(names, func(n string) bool { return !known[n] }) {
		return nil, nil
	}
	all, err := rs.Rates(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(all))
	for _, n := range all {
		out[n] = true
	}
	return out, nil
}

// Unreadable is a resource whose state the backend could not read, in
// `slots --json` beside the others.
type Unreadable struct {
	Resource string `json:"resource"`
	Error    string `json:"error"`
}

// UnreadableError names the resources Statuses skipped because their
// state could not be read; the statuses returned with it are the others'.
type UnreadableError struct {
	Resources []Unreadable
}

// unreadable is e's resources; none for a nil e.
func (e *UnreadableError) unreadable() []Unreadable {
	if e == nil {
		return nil
	}
	return e.Resources
}

func (e *UnreadableError) Error() string {
	var b strings.Builder
	for i, u := range e.Resources {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "the state of %s cannot be read (skipped; the others are listed): %s", u.Resource, u.Error)
	}
	return b.String()
}

// unique is names without repeats, in their first order: a resource
// named twice (slots a a, ?resource=a&resource=a) is read and shown once.
func unique(names []string) []string {
	seen := make(map[string]bool, len(names))
	out := names[:0:0]
	for _, n := range names {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// UnknownResourceError names a resource neither configured nor with
// state.
type UnknownResourceError string

func (e UnknownResourceError) Error() string { return string(e) }

// unknownResource says that resource is neither configured nor has
// state in project, with the closest of the known names.
func unknownResource(project, resource string, known []string) error {
	msg := fmt.Sprintf("resource %q is unknown in project %s: it is not configured and has no state", resource, project)
	switch near := nearest.Names(resource, known); {
	case len(near) > 0:
		msg += "; did you mean " + strings.Join(near, " or ") + "?"
	case len(known) == 0:
		msg += "; no resource is configured or in use"
	case len(known) <= 20:
		msg += "; known: " + strings.Join(known, ", ")
	default:
		msg += fmt.Sprintf("; %d are known: see 'governor slots'", len(known))
	}
	return UnknownResourceError(msg)
}
