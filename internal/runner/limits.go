package runner

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
// the limit that applies to resource, else nil. The limit this process
// asks the backend for is limit, from origin: a configured limit wins
// over --limit (origin names the configuration key and where it was set),
// or it is asked itself (origin ""). The backend's stored limit wins over
// both while the resource is in use: it changes only when the resource
// is idle (a differing request is recorded as drift). It reads the
// resource's status once, and changes nothing.
func NoteLimit(ctx context.Context, g *governor.Governor, resource string, asked, limit int, origin string) (*LimitNote, error) {
	if asked == 0 {
		return nil, nil
	}
	n := &LimitNote{Resource: resource, Asked: asked, InForce: limit, Source: origin}
	if origin == "" {
		n.Source = "--limit"
	}
	st, err := g.Status(ctx, resource)
	if err != nil {
		return nil, err
	}
	if l := st.LiveLimit; l != nil && st.Limit != asked {
		// A live limit wins over what processes ask for (governor limit).
		n.InForce = st.Limit
		n.Source = fmt.Sprintf("a live limit set by %s ('governor limit %s --clear' returns to the configured one)",
			safetext.Escape(l.By), resource)
	} else if st.Limit != 0 && st.Limit != limit && (st.Used > 0 || st.QueueLen() > 0) {
		n.InForce = st.Limit
		n.Source = "the backend: another process set it, and it changes only when " + resource + " is idle (no holder, no waiter); 'governor events " + resource + "' shows the drift"
	}
	if n.InForce == asked {
		return nil, nil
	}
	n.Message = fmt.Sprintf("%s: --limit %d is not applied: the limit in force is %d, from %s", resource, asked, n.InForce, n.Source)
	return n, nil
}
