package view

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/humantime"
)

// WriteSlots writes the table of `governor slots` for sts, with the
// mkdir slot of each resource locks binds to one, then the rate shares
// of rss (RateShares), a block each. err, when it is an
// *UnreadableError, names the resources that could not be read, each on
// a line of its own after the others. note, when not nil, says what to
// know of a resource's limit, on a line under it ("": nothing).
func WriteSlots(w io.Writer, project string, sts []governor.Status, rss []governor.RateStatus, locks map[string]string, note func(resource string) string, err error) {
	var ue *UnreadableError
	errors.As(err, &ue)
	unreadable := ue.unreadable()
	if len(sts) == 0 && len(unreadable) == 0 && len(rss) == 0 {
		fmt.Fprintf(w, "project %s: no resources in use or configured\n", project)
		return
	}
	writeStatuses(w, sts, locks, note)
	for i, u := range unreadable {
		if i > 0 || len(sts) > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s  UNREADABLE: %s\n", Dash(u.Resource), Dash(u.Error))
	}
	if len(rss) > 0 && (len(sts) > 0 || len(unreadable) > 0) {
		fmt.Fprintln(w)
	}
	WriteRateShares(w, rss)
}

func writeStatuses(w io.Writer, sts []governor.Status, locks map[string]string, note func(string) string) {
	for i, st := range sts {
		if i > 0 {
			fmt.Fprintln(w)
		}
		m := mkdirSlotOf(locks, &st) // first: the wrapper's hold counts in use
		fmt.Fprintf(w, "%s  limit %d  in use %d  free %d  waiting %d%s", Dash(st.Key.Resource), st.Limit, st.Used,
			max(st.Limit-st.Used, 0), len(st.Waiters), liveText(st))
		if st.DriftLimit != 0 {
			fmt.Fprintf(w, "  DRIFT: a process asked for limit %d, not the %d in force (the first stored wins)", st.DriftLimit, st.Limit)
		}
		fmt.Fprintln(w)
		if note != nil {
			if n := note(st.Key.Resource); n != "" {
				fmt.Fprintf(w, "  %s\n", n)
			}
		}
		writePolicy(w, st)
		if p := st.Paused; p != nil {
			fmt.Fprintf(w, "  PAUSED since %s ago by %s: nothing new is granted until 'governor resume %s'\n",
				humantime.Ago(st.Now.Sub(p.Since)), Dash(p.By), Dash(st.Key.Resource))
		}
		if e := ExpectedWait(st, 0); !e.Fits {
			fmt.Fprintf(w, "  expected wait for a newcomer: %s\n", e)
		}
		writeSignals(w, st)
		writeMkdirSlot(w, m)
		if len(st.Holders) > 0 {
			tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "  HOLDER\tSESSION\tHOST\tPROCESSES\tWEIGHT\tAGE\tHEARTBEAT\tPROGRESS\tEXPIRES IN\tTOKEN\tCOMMAND"+classKeyHeader(st))
			for _, h := range st.Holders {
				fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%d\t%s\t%s ago\t%s\t%s\t%d\t%s%s\n", Dash(h.LeaseID), Dash(h.Session), Dash(h.Host), h.Processes(),
					h.Weight, humantime.Ago(st.Now.Sub(h.AcquiredAt)), humantime.Ago(st.Now.Sub(h.Heartbeat)), progress(st.Now, h),
					humantime.Ago(h.Expires.Sub(st.Now)), h.Token, Dash(h.Command), classKey(st, h.Declaration))
			}
			tw.Flush()
			for _, h := range st.Holders {
				if !h.Cancelled.IsZero() {
					fmt.Fprintf(w, "  %s: cancelled in progress %s ago; held until its work has stopped and it is released\n",
						Dash(h.LeaseID), humantime.Ago(st.Now.Sub(h.Cancelled)))
				}
			}
		}
		writeShares(w, st)
		if len(st.Waiters) > 0 {
			tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "  WAITER\tSESSION\tHOST\tPROCESSES\tWEIGHT\tWAITING FOR\tEXPECTED WAIT\tCOMMAND"+classKeyHeader(st))
			for i, wt := range st.Waiters {
				fmt.Fprintf(tw, "  %d. %s\t%s\t%s\t%s\t%d\t%s\t%s\t%s%s\n", i+1, Dash(short(wt.ID)), Dash(wt.Session), Dash(wt.Host), wt.Processes(),
					wt.Weight, humantime.Ago(st.Now.Sub(wt.EnqueuedAt)), ExpectedWait(st, i+1), Dash(wt.Command), classKey(st, wt.Declaration))
			}
			tw.Flush()
		}
	}
}

// progress is a holder's last progress mark for the PROGRESS column:
// "40s ago", with "/5m00s" when it has a progress timeout; "-" when it
// has neither a timeout nor a mark.
func progress(now time.Time, h governor.Holder) string {
	if h.Progress.IsZero() {
		return "-"
	}
	s := humantime.Ago(now.Sub(h.Progress)) + " ago"
	if h.ProgressTimeout > 0 {
		s += " /" + humantime.Ago(h.ProgressTimeout)
	}
	return s
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// writePolicy writes the queue policy in force, each class's use with
// its reserve and cap, and a policy drift.
func writePolicy(w io.Writer, st governor.Status) {
	if !st.Policy.IsZero() {
		fmt.Fprintf(w, "  policy %s", PolicyText(st.Policy))
		use := classUse(st)
		for i, c := range st.Policy.Classes {
			sep := ", "
			if i == 0 {
				sep = "; classes "
			}
			fmt.Fprintf(w, "%s%s %d", sep, c.Name, use[c.Name])
			if c.Reserve > 0 {
				fmt.Fprintf(w, " (reserve %d)", c.Reserve)
			}
			if c.Cap > 0 {
				fmt.Fprintf(w, " (cap %d)", c.Cap)
			}
		}
		fmt.Fprintln(w)
	}
	if st.DriftPolicy != "" {
		fmt.Fprintf(w, "  DRIFT: a process asked for queue policy %s\n", encodedPolicyText(st.DriftPolicy))
	}
}

// classKeyHeader and classKey: the CLASS and KEY columns, under a queue
// policy only.
func classKeyHeader(st governor.Status) string {
	if st.Policy.IsZero() {
		return ""
	}
	return "\tCLASS\tKEY"
}

func classKey(st governor.Status, d governor.Declaration) string {
	if st.Policy.IsZero() {
		return ""
	}
	return "\t" + Dash(d.Priority) + "\t" + Dash(d.FairKey)
}

// writeSignals writes what rate-limit signals did to st: the adaptive
// limit against the configured one, a cool-off in force, the last signal.
func writeSignals(w io.Writer, st governor.Status) {
	if a := st.Adaptive; a != nil {
		fmt.Fprintf(w, "  adaptive: limit %d of configured %d (%d successes towards one more)\n", a.Limit, a.Max, a.Successes)
	}
	if c := st.CoolingOff(); c != "" {
		fmt.Fprintf(w, "  %s\n", strings.ToUpper(c[:1])+c[1:])
	}
	if !st.LastSignal.IsZero() {
		fmt.Fprintf(w, "  last rate-limit signal %s ago\n", humantime.Ago(st.Now.Sub(st.LastSignal)))
	}
}

// liveText says, for text, that the limit in force was set live and by
// whom; "" when it was not (it is then the one processes ask for).
func liveText(st governor.Status) string {
	l := st.LiveLimit
	if l == nil {
		return ""
	}
	return fmt.Sprintf("  LIVE LIMIT set by %s %s ago ('governor limit %s --clear' returns to the configured one)",
		Dash(l.By), humantime.Ago(st.Now.Sub(l.At)), Dash(st.Key.Resource))
}

// AllIdle reports whether none of sts has anything to show beside its
// limit: no holder, no waiter, no pause, no live limit, no drift, no
// cool-off in force, and no mkdir slot of locks held.
func AllIdle(sts []governor.Status, locks map[string]string) bool {
	for i := range sts {
		st := &sts[i]
		if st.Used > 0 || len(st.Holders) > 0 || len(st.Waiters) > 0 || st.Paused != nil || st.LiveLimit != nil ||
			st.DriftLimit != 0 || st.CoolOff.After(st.Now) {
			return false
		}
		if m := mkdirSlotOf(locks, st); m != nil && m.State != "free" {
			return false
		}
	}
	return true
}

// writeShares writes st's capacity leases, one a line.
func writeShares(w io.Writer, st governor.Status) {
	shares := sharesOf(st)
	if len(shares) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  SHARE\tSESSION\tHOST\tPID\tWANTED\tHELD\tUSED\tEXPIRES IN")
	for _, s := range shares {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\n", Dash(s.LeaseID), Dash(s.Session), Dash(s.Host), s.PID, s.Wanted, s.Held, s.Used,
			humantime.Ago(time.Duration(s.ExpiresInSeconds*float64(time.Second))))
	}
	tw.Flush()
}
