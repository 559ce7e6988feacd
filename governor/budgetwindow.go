package governor

import (
	"fmt"
	"time"
)

// BudgetWindow is when a budget resets: fixed windows of Per aligned on
// the Unix epoch (Per 24h: every day at 00:00 UTC), or calendar days or
// months ("day", "month") in Location (nil: UTC). Exactly one of Per and
// Calendar is set.
type BudgetWindow struct {
	Per      time.Duration
	Calendar string
	Location *time.Location
}

// The bounds of BudgetWindow.Per (Validate names them in its error).
const (
	minBudgetPer = time.Second
	maxBudgetPer = 366 * 24 * time.Hour
)

// Validate says what is wrong with w, naming the bad value.
func (w BudgetWindow) Validate() error {
	switch {
	case w.Per != 0 && w.Calendar != "":
		return invalid("budget window per %v and calendar %q; allowed: one of them", w.Per, w.Calendar)
	case w.Calendar != "":
		if w.Calendar != "day" && w.Calendar != "month" {
			return invalid("budget window calendar %q; allowed: day, month", w.Calendar)
		}
		if w.Location == time.Local {
			return invalid("budget window calendar %s in the machine's local zone; allowed: an IANA time zone such as UTC or Europe/Paris (a budget's day is the same on every machine)", w.Calendar)
		}
	case w.Per < minBudgetPer || w.Per > maxBudgetPer:
		return invalid("budget window per %v; allowed: %v to %v", w.Per, minBudgetPer, maxBudgetPer)
	}
	return nil
}

// Bounds is the window that holds now: its start and its end (the
// reset time). A calendar day in a zone with a daylight-saving change
// lasts 23 or 25 hours, as the zone says.
func (w BudgetWindow) Bounds(now time.Time) (start, end time.Time) {
	if w.Calendar == "" {
		per := max(w.Per, minBudgetPer).Milliseconds()
		s := now.UnixMilli() / per * per
		return time.UnixMilli(s), time.UnixMilli(s + per)
	}
	loc := w.Location
	if loc == nil {
		loc = time.UTC
	}
	t := now.In(loc)
	if w.Calendar == "month" {
		s := time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, loc)
		return s, s.AddDate(0, 1, 0)
	}
	s := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, loc)
	return s, s.AddDate(0, 0, 1)
}

// String is the window as configured: "per 24h0m0s", "calendar day in
// Europe/Paris".
func (w BudgetWindow) String() string {
	if w.Calendar == "" {
		return fmt.Sprintf("per %v", w.Per)
	}
	loc := "UTC"
	if w.Location != nil && !utcNames[w.Location.String()] {
		loc = w.Location.String()
	}
	return fmt.Sprintf("calendar %s in %s", w.Calendar, loc)
}

// utcNames are the IANA names of UTC and of zones always at its offset
// (tzdata's links to Etc/UTC and Etc/GMT): a window in any of them is
// UTC's, and its definition says so, so that "Etc/UTC" in one config and
// "UTC" in another are one budget.
var utcNames = map[string]bool{
	"UTC": true, "Etc/UTC": true, "UCT": true, "Etc/UCT": true,
	"Universal": true, "Etc/Universal": true, "Zulu": true, "Etc/Zulu": true,
	"GMT": true, "Etc/GMT": true, "GMT0": true, "Etc/GMT0": true,
	"GMT+0": true, "Etc/GMT+0": true, "GMT-0": true, "Etc/GMT-0": true,
	"Greenwich": true, "Etc/Greenwich": true,
}
