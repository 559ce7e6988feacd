package acquire

import (
	"context"
	"fmt"
	"slices"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/safetext"
)

// LimitNote tells that a --limit the user gave is not the limit that
// applies to a resource, and why.
type LimitNote struct {
	Resource string `json:"resource"`
	Asked    int    `json:"limit_asked"`    // --limit
	InForce  int    `json:"limit_in_force"` // the limit that applies
	Source   string `json:"limit_source"`   // where InForce comes from
	Message  string `json:"limit_message"`  // the whole note, as printed
}

// NoteLimit returns a note when asked, a --limit (0: none given), is not
// the limit in force on resource, else nil. The limit this process asks
// the backend for is limit, from origin (LimitFor: a configured limit
// wins over --limit, origin naming the key and where it was set; origin
// "" is --limit itself). granted is the limit in force a grant reported
// (governor.Lease.Limit; 0: none known): when it is both asked and
// limit, there is nothing to note. Otherwise the limit in force is
// inForce's (a live limit, else the adaptive one, else the stored one
// while the resource is in use), from one read of the
// resource's status, which tells where it comes from too. It changes
// nothing.
func NoteLimit(ctx context.Context, g *governor.Governor, resource string, asked, limit int, origin string, granted int) (*LimitNote, error) {
	if asked == 0 || asked == limit && granted == limit {
		return nil, nil
	}
	st, err := g.Status(ctx, resource)
	if err != nil {
		return nil, err
	}
	n := &LimitNote{Resource: resource, Asked: asked, Source: origin}
	if origin == "" {
		n.Source = "--limit"
	}
	n.InForce, n.Source = inForce(st, resource, limit, n.Source)
	if n.InForce == asked {
		return nil, nil
	}
	n.Message = fmt.Sprintf("%s: --limit %d is not applied: the limit in force is %d, from %s", resource, asked, n.InForce, n.Source)
	return n, nil
}

// inForce is the limit in force on resource for a process asking for
// limit, read from st, and where it comes from (asked, when it is
// limit). The rule is the backends' (lib-slow.lua's in_force, the file
// backend's twin; the conformance suite's grantLimit holds them to it): a
// live limit wins; else the adaptive limit of a resource adaptive under
// the maximum asked; else the stored limit while the resource is in use
// (a holder or a waiter: it changes only when idle); else limit.
func inForce(st governor.Status, resource string, limit int, asked string) (int, string) {
	switch {
	case st.LiveLimit != nil:
		// A live limit wins over what processes ask for (governor limit).
		return st.Limit, fmt.Sprintf("a live limit set by %s ('governor limit %s --clear' returns to the configured one)",
			safetext.Escape(st.LiveLimit.By), resource)
	case st.Adaptive != nil && st.Adaptive.Limit > 0 && st.Adaptive.Max == limit:
		return st.Adaptive.Limit, fmt.Sprintf("adaptive concurrency (providers.*.adaptive): halved on rate-limit signals, it is %d of its maximum %d now", st.Adaptive.Limit, st.Adaptive.Max)
	case st.Limit != 0 && st.Limit != limit && (st.Used > 0 || st.QueueLen() > 0):
		return st.Limit, "the backend: another process set it, and it changes only when " + resource + " is idle (no holder, no waiter); 'governor events " + resource + "' shows the drift"
	}
	return limit, asked
}

// limitNotes says the limit notes of a plan's items (NoteLimit), each
// once: from the limit its grant reported, or, when a wait comes first
// (the note is said at once, before any wait) or the acquire fails, from
// a status read.
type limitNotes struct {
	ctx   context.Context
	g     *governor.Governor
	h     *Held
	ev    Events
	asked int     // --limit
	due   []*Item // the items whose note is not said yet, in plan order
}

func (n *limitNotes) say(it *Item, granted int) {
	if isExecRun(it.Name) {
		return // --limit is never theirs: execRunLimitNote says so once
	}
	note, err := NoteLimit(n.ctx, n.g, it.Name, n.asked, it.Limit, it.Origin, granted)
	if err == nil && note != nil { // a failed read is the acquire's to report
		n.h.notes = append(n.h.notes, note)
		n.ev.note(note.Message)
	}
}

// flush says the notes still due, from a status read.
func (n *limitNotes) flush() {
	for _, it := range n.due {
		n.say(it, 0)
	}
	n.due = nil
}

// granted says the notes still due from the limits the grants reported.
func (n *limitNotes) granted() {
	for _, it := range n.due {
		granted := 0
		if it.Lease != nil {
			granted = it.Lease.Limit()
		}
		n.say(it, granted)
	}
	n.due = nil
}

// before is ev with the notes still due said before a wait for a mkdir
// slot.
func (n *limitNotes) before(ev Events) Events {
	told := ev.OnMkdirWait
	ev.OnMkdirWait = func(msg string) {
		n.flush()
		if told != nil {
			told(msg)
		}
	}
	return ev
}

// execRunLimitNote is what to say when --limit (asked) reaches none of
// items: every one is the project's run lock or its join slots, whose
// limit run.max_concurrent_runs sets ("" otherwise).
func execRunLimitNote(items []*Item, asked int) string {
	if asked == 0 || !slices.ContainsFunc(items, func(it *Item) bool { return isExecRun(it.Name) }) ||
		slices.ContainsFunc(items, func(it *Item) bool { return !isExecRun(it.Name) }) {
		return ""
	}
	return fmt.Sprintf("--limit %d is not used: it is the limit of a --resource the configuration does not name, and this run names none "+
		"(a run without --resource holds the project's run lock: one such run at a time)", asked)
}
