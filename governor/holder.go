package governor

import (
	"fmt"
	"strings"
	"time"

	"github.com/governor-dev/governor/governor/humantime"
	"github.com/governor-dev/governor/governor/proc"
	"github.com/governor-dev/governor/governor/safetext"
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
	fmt.Fprintf(&b, "(%s on %s", h.Processes(), orUnknown(h.Host))
	if !h.AcquiredAt.IsZero() {
		fmt.Fprintf(&b, ", since %s ago", humantime.Ago(now.Sub(h.AcquiredAt)))
	}
	if !h.Heartbeat.IsZero() {
		fmt.Fprintf(&b, ", last heartbeat %s ago", humantime.Ago(now.Sub(h.Heartbeat)))
	}
	if !h.Progress.IsZero() {
		fmt.Fprintf(&b, ", last progress %s ago", humantime.Ago(now.Sub(h.Progress)))
	}
	if !h.Expires.IsZero() {
		fmt.Fprintf(&b, ", expires in %s", humantime.Ago(h.Expires.Sub(now)))
	}
	fmt.Fprintf(&b, ", lease %s, token %d)", safetext.Escape(h.LeaseID), h.Token)
	return b.String()
}

// Processes names the processes of a declaration for people: "pid N";
// "no process declared" (the lease lives by its TTL alone); or, for a
// `governor run`, "governor pid G, command pid C, watchdog pid W", the
// command found on this host (omitted elsewhere, or when gone).
func (d Declaration) Processes() string {
	switch {
	case d.PID == 0:
		return "no process declared"
	case d.GovernorPID == 0:
		return fmt.Sprintf("pid %d", d.PID)
	}
	s := fmt.Sprintf("governor pid %d", d.GovernorPID)
	if c := d.CommandPID(); c != 0 {
		s += fmt.Sprintf(", command pid %d", c)
	}
	return s + fmt.Sprintf(", watchdog pid %d", d.PID)
}

// CommandPID finds, on this host, the command a `governor run` holder
// runs: the child of GovernorPID that is not its watchdog (PID). It is 0
// when the declaration is not a run's, from another host or PID
// namespace, or when governor or its watchdog is gone. The watchdog,
// proven alive by its start time and still governor's child, proves that
// GovernorPID was not reused.
func (d Declaration) CommandPID() int {
	if d.GovernorPID == 0 || d.PID == 0 || d.HostID == "" || d.HostID != proc.HostID() {
		return 0
	}
	if proc.Check(d.PID, d.StartTime) != proc.Alive {
		return 0
	}
	if ppid, err := proc.ParentPID(d.PID); err != nil || ppid != d.GovernorPID {
		return 0
	}
	for _, c := range proc.Children(d.GovernorPID) {
		if c != d.PID {
			return c
		}
	}
	return 0
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown host"
	}
	return safetext.Escape(s)
}
