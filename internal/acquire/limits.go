package acquire

import (
	"context"
	"fmt"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/safetext"
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
// "" is --limit itself). The limit in force is governor.LimitInForce's:
// a live limit, else the adaptive one, else the stored one while the
// resource is in use. It reads the resource's status once, and changes
// nothing.
func NoteLimit(ctx context.Context, g *governor.Governor, resource string, asked, limit int, origin string) (*LimitNote, error) {
	if asked == 0 {
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
	var src governor.InForceSource
	n.InForce, src = governor.LimitInForce(st, limit)
	switch src {
	case governor.InForceLive:
		// A live limit wins over what processes ask for (governor limit).
		n.Source = fmt.Sprintf("a live limit set by %s ('governor limit %s --clear' returns to the configured one)",
			safetext.Escape(st.LiveLimit.By), resource)
	case governor.InForceAdaptive:
		n.Source = fmt.Sprintf("adaptive concurrency (providers.*.adaptive): halved on rate-limit signals, it is %d of its maximum %d now", st.Adaptive.Limit, st.Adaptive.Max)
	case governor.InForceStored:
		n.Source = "the backend: another process set it, and it changes only when " + resource + " is idle (no holder, no waiter); 'governor events " + resource + "' shows the drift"
	}
	if n.InForce == asked {
		return nil, nil
	}
	n.Message = fmt.Sprintf("%s: --limit %d is not applied: the limit in force is %d, from %s", resource, asked, n.InForce, n.Source)
	return n, nil
}
