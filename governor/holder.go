package governor

import (
	"fmt"
	"strings"
	"time"

	"github.com/governor-dev/governor/internal/safetext"
)

// Describe says who holds a lease, for refusals and listings: session,
// process, since when, last heartbeat, expiry and token, relative to now
// (use the backend's clock, Status.Now, to avoid skew). What the holder
// declared is escaped for a terminal (another process wrote it).
func (h Holder) Describe(now time.Time) string {
	var b strings.Builder
	if h.Session != "" {
		fmt.Fprintf(&b, "session %s ", safetext.Escape(h.Session))
	}
	fmt.Fprintf(&b, "(pid %d on %s", h.PID, orUnknown(h.Host))
	if !h.AcquiredAt.IsZero() {
		fmt.Fprintf(&b, ", since %s ago", Ago(now.Sub(h.AcquiredAt)))
	}
	if !h.Heartbeat.IsZero() {
		fmt.Fprintf(&b, ", last heartbeat %s ago", Ago(now.Sub(h.Heartbeat)))
	}
	if !h.Expires.IsZero() {
		fmt.Fprintf(&b, ", expires in %s", Ago(h.Expires.Sub(now)))
	}
	fmt.Fprintf(&b, ", lease %s, token %d)", safetext.Escape(h.LeaseID), h.Token)
	return b.String()
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown host"
	}
	return safetext.Escape(s)
}

// Ago formats a duration for people: "850ms", "12s", "3m04s", "2h05m".
func Ago(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	default:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
}
