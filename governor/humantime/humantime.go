// Package humantime says durations and times to people in the one form
// governor's messages use: the library's errors (who holds a slot and
// since when, a cool-off's end) and the tool's tables, notes and status
// line alike. It imports nothing of the module, so the library and the
// tool both import it (package governor keeps data, not words).
package humantime

import (
	"fmt"
	"time"
)

// Ago formats a duration for people: "850ms", "12s", "3m04s", "2h05m". A
// negative duration reads as 0ms.
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

// CoolOffNote says that a resource is cooling off until end, left from
// now: the one wording of every message about a cool-off.
func CoolOffNote(end time.Time, left time.Duration) string {
	if left >= time.Second {
		left = left.Round(time.Second)
	}
	return fmt.Sprintf("cooling off after a rate-limit signal until %s (%s from now)",
		end.UTC().Round(time.Second).Format(time.RFC3339), Ago(left))
}
