package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/nearest"
	"github.com/governor-dev/governor/internal/runner"
	"github.com/governor-dev/governor/internal/safetext"
)

func (a *app) slotsCmd() *cobra.Command {
	var watch bool
	cmd := &cobra.Command{
		Use:   "slots [RESOURCE...]",
		Short: "Show each resource's limit, use, holders and waiters, without acquiring anything",
		Long: `slots lists, for each resource (all resources with state or configuration when none
are named): its limit, the weight in use, what is free, every holder (session,
host and pid, weight, age, last heartbeat, last progress mark, time to expiry,
fencing token, command with secrets redacted) and every waiter in queue order.
PROGRESS is the last progress mark ('governor touch', 'governor renew'; the
grant when none came yet) and, after '/', the lease's --progress-timeout; "-" for
a lease with neither. A heartbeat says governor is alive; a progress mark says
the work is: see 'governor run --help', --progress-timeout.

Exec runs: "run" is the project's run lock and "run:join" its join slots (see
'governor run --help'); 'governor slots --project P' shows them, with the
provider:* slots, for project P.

A provider's rate-limit signals ('governor backoff', 'governor run
--backoff-exit-code', the library's Provider.Do) show as a cool-off in force and
its end, the time of the last signal, and for an adaptive provider
(providers.NAME.adaptive) the limit AIMD holds against the configured one.

A resource bound to the with-heavy-lock slot (resources.NAME.mkdir_lock) also
shows DIR/slot.d: free, or held with the pid and cmd the holder wrote, marked
"HELD outside governor" when no lease of the resource names that pid (the old
wrapper holds it). A slot.d without a readable pid for longer than 10m is shown
as STUCK with the command that clears it ('governor takeover NAME --force');
nothing removes it silently.

--json prints one object: {"project", "resources": [{"resource", "limit", "used",
"free", "drift_limit", "holders": [...], "waiters": [...], "counters": {...},
"mkdir_slot": {"path", "state", "pid", "cmd", "since", "outside_governor", "stuck",
"clear"}, "adaptive": {"limit", "max", "successes"}, "cool_off_until",
"last_signal_at"}]}; times are RFC 3339 and durations are seconds. Fields are only ever
added, never renamed.

--watch reads again every second until interrupted. On a terminal it redraws the
screen; into a pipe or a file it writes no escapes: with --json one object per
line per second (JSON Lines), else one block per second, each opened by a line
"-- TIME" (RFC 3339).

A RESOURCE named that is neither configured nor has state is an error naming the
closest known names.

Exit codes: 0 listed (with --watch: interrupted); 125 an unknown RESOURCE, bad
flags, bad config or backend unreachable.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			g, err := a.open(ctx, openOptions{})
			if err != nil {
				return err
			}
			defer g.Close()
			if !watch {
				return a.printSlots(ctx, cmd.OutOrStdout(), g, args)
			}
			ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
			defer stop()
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			w := cmd.OutOrStdout()
			screen := runner.IsTerminal(w)
			for {
				var b strings.Builder
				if err := a.watchSlots(ctx, &b, g, args, screen); err != nil {
					return err
				}
				if _, err := io.WriteString(w, b.String()); err != nil {
					return exitWith(ExitFailure, err) // the reader is gone
				}
				select {
				case <-ctx.Done():
					return nil
				case <-tick.C:
				}
			}
		},
	}
	cmd.Flags().BoolVar(&watch, "watch", false, "redraw every second until interrupted")
	return cmd
}

// slotsJSON is the stable --json schema of `governor slots`.
type slotsJSON struct {
	Project   string         `json:"project"`
	Resources []resourceJSON `json:"resources"`
}

type resourceJSON struct {
	Resource   string `json:"resource"`
	Limit      int    `json:"limit"`
	Used       int    `json:"used"`
	Free       int    `json:"free"`
	DriftLimit int    `json:"drift_limit,omitempty"`
	// LimitSource says where the limit in force came from: "live" (set
	// by 'governor limit': see live_limit), "adaptive" (held by AIMD:
	// see adaptive), "asked" (by the processes that use it), or
	// "configured" (never used yet).
	LimitSource string         `json:"limit_source"`
	LiveLimit   *liveLimitJSON `json:"live_limit,omitempty"`
	Paused      *pausedJSON    `json:"paused,omitempty"`
	// ExpectedWait is a newcomer's (weight 1, at the tail).
	ExpectedWait estimateJSON   `json:"expected_wait"`
	Holders      []holderJSON   `json:"holders"`
	Waiters      []waiterJSON   `json:"waiters"`
	Counters     map[string]int `json:"counters"`
	MkdirSlot    *mkdirSlotJSON `json:"mkdir_slot,omitempty"`
	// Under a queue policy: the policy in force (governor.Policy.Encode),
	// one asked for that differs, and the weight each class holds.
	Policy      string         `json:"policy,omitempty"`
	DriftPolicy string         `json:"drift_policy,omitempty"`
	ClassUse    map[string]int `json:"class_use,omitempty"`
	// Adaptive concurrency and rate-limit signals (governor backoff).
	Adaptive     *governor.AdaptiveState `json:"adaptive,omitempty"`
	CoolOffUntil *time.Time              `json:"cool_off_until,omitempty"`
	LastSignalAt *time.Time              `json:"last_signal_at,omitempty"`
}

type liveLimitJSON struct {
	Limit int       `json:"limit"`
	By    string    `json:"by"`
	SetAt time.Time `json:"set_at"`
}

type pausedJSON struct {
	Since time.Time `json:"since"`
	By    string    `json:"by"`
}

// estimateJSON is a governor.ExpectedWait: seconds is null when unknown;
// text says it and what it rests on; holds is how many recent holds it
// rests on.
type estimateJSON struct {
	Seconds         *float64 `json:"seconds"`
	Text            string   `json:"text"`
	Holds           int      `json:"holds"`
	MeanHoldSeconds float64  `json:"mean_hold_seconds"`
	Paused          bool     `json:"paused,omitempty"`
}

func toEstimateJSON(e governor.Estimate) estimateJSON {
	out := estimateJSON{Text: e.String(), Holds: e.Holds, MeanHoldSeconds: secs(e.MeanHold), Paused: e.Paused}
	if e.Known {
		s := secs(e.Wait)
		out.Seconds = &s
	}
	return out
}

// limitSource says where the limit in force of st came from, for slots
// and config show: "live" (governor limit), "adaptive" (held by AIMD
// after rate-limit signals: see adaptive), "asked" (by the processes
// that use it) or "configured" (never used: the configuration's).
func limitSource(st governor.Status) string {
	switch {
	case st.LiveLimit != nil:
		return "live"
	case st.Adaptive != nil && st.Adaptive.Limit == st.Limit:
		return "adaptive"
	case st.Counters.Acquired > 0 || st.Used > 0 || len(st.Waiters) > 0:
		return "asked"
	}
	return "configured"
}

// liveText says, for text, that the limit in force was set live and by
// whom; "" when it was not (it is then the one processes ask for).
func liveText(st governor.Status) string {
	l := st.LiveLimit
	if l == nil {
		return ""
	}
	return fmt.Sprintf("  LIVE LIMIT set by %s %s ago ('governor limit %s --clear' returns to the configured one)",
		dash(l.By), governor.Ago(st.Now.Sub(l.At)), dash(st.Key.Resource))
}

type holderJSON struct {
	LeaseID          string    `json:"lease_id"`
	Session          string    `json:"session"`
	Host             string    `json:"host"`
	PID              int       `json:"pid"` // the process whose death frees the lease; 0: none declared
	GovernorPID      int       `json:"governor_pid,omitempty"`
	CommandPID       int       `json:"command_pid,omitempty"`
	Processes        string    `json:"processes"`
	Weight           int       `json:"weight"`
	Token            int64     `json:"token"`
	AcquiredAt       time.Time `json:"acquired_at"`
	HeartbeatAt      time.Time `json:"heartbeat_at"`
	ExpiresAt        time.Time `json:"expires_at"`
	AgeSeconds       float64   `json:"age_seconds"`
	HeartbeatSeconds float64   `json:"heartbeat_age_seconds"`
	ExpiresInSeconds float64   `json:"expires_in_seconds"`
	Command          string    `json:"command"`
	// The last progress mark ('governor touch', 'governor renew'; the
	// grant when none came yet) of a lease with a progress timeout, or
	// of any lease marked; absent otherwise.
	ProgressAt             *time.Time `json:"progress_at,omitempty"`
	ProgressSeconds        *float64   `json:"progress_age_seconds,omitempty"`
	ProgressTimeoutSeconds float64    `json:"progress_timeout_seconds,omitempty"`
	Priority               string     `json:"priority,omitempty"`
	FairKey                string     `json:"fair_key,omitempty"`
	// When a newer acquire with its supersede key cancelled it in
	// progress: held until its command has stopped; absent otherwise.
	CancelledAt *time.Time `json:"cancelled_at,omitempty"`
}

type waiterJSON struct {
	Position       int       `json:"position"`
	ID             string    `json:"id"`
	Session        string    `json:"session"`
	Host           string    `json:"host"`
	PID            int       `json:"pid"`
	GovernorPID    int       `json:"governor_pid,omitempty"`
	Processes      string    `json:"processes"`
	Weight         int       `json:"weight"`
	EnqueuedAt     time.Time `json:"enqueued_at"`
	WaitingSeconds float64   `json:"waiting_seconds"`
	Command        string    `json:"command"`
	// ExpectedWait: see governor.ExpectedWait.
	ExpectedWait estimateJSON `json:"expected_wait"`
	Priority     string       `json:"priority,omitempty"`
	FairKey      string       `json:"fair_key,omitempty"`
}

// statusSource reads resources' state: a *governor.Governor, or serve's
// reopening one.
type statusSource interface {
	Project() string
	Resources(ctx context.Context) ([]string, error)
	Status(ctx context.Context, resource string) (governor.Status, error)
}

// statuses reads the named resources, or every resource with state plus
// every configured one. A name neither configured nor with state is an
// unknownResourceError.
func (a *app) statuses(ctx context.Context, g statusSource, names []string) ([]governor.Status, error) {
	have, err := g.Resources(ctx)
	if err != nil {
		return nil, exitWith(ExitFailure, err)
	}
	l, err := a.load()
	if err != nil {
		return nil, err
	}
	limits := l.Config.Limits()
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
	if len(names) == 0 {
		names = all
	}
	for _, n := range names {
		if !known[n] {
			return nil, exitWith(ExitFailure, unknownResource(g.Project(), n, all))
		}
	}
	var out []governor.Status
	for _, n := range names {
		st, err := g.Status(ctx, n)
		if err != nil {
			return nil, exitWith(ExitFailure, err)
		}
		if st.Limit == 0 {
			st.Limit = limits[n] // never used yet: show the configured limit
		}
		out = append(out, st)
	}
	return out, nil
}

// watchSlots writes one reading of --watch: the whole screen redrawn on
// a terminal; else one JSON object on one line, or a text block opened by
// a "-- TIME" line.
func (a *app) watchSlots(ctx context.Context, w io.Writer, g *governor.Governor, names []string, screen bool) error {
	if screen {
		fmt.Fprint(w, "\033[H\033[2J")
		return a.printSlots(ctx, w, g, names)
	}
	sts, err := a.statuses(ctx, g, names)
	if err != nil {
		return err
	}
	if a.json {
		b, err := json.Marshal(a.slotsReport(g.Project(), sts))
		if err != nil {
			return err
		}
		_, err = w.Write(append(safetext.JSON(b), '\n'))
		return err
	}
	fmt.Fprintf(w, "-- %s\n", time.Now().UTC().Format(time.RFC3339))
	writeSlots(w, g.Project(), sts, a.mkdirLocks())
	return nil
}

func (a *app) printSlots(ctx context.Context, w io.Writer, g *governor.Governor, names []string) error {
	sts, err := a.statuses(ctx, g, names)
	if err != nil {
		return err
	}
	if a.json {
		return writeJSON(w, a.slotsReport(g.Project(), sts))
	}
	writeSlots(w, g.Project(), sts, a.mkdirLocks())
	return nil
}

// slotsReport is what 'governor slots --json' prints and /api/v1/slots
// of 'governor serve' serves: sts in the --json schema, with their mkdir
// slots.
func (a *app) slotsReport(project string, sts []governor.Status) slotsJSON {
	return toSlotsJSON(project, sts, a.mkdirLocks())
}

// unknownResourceError names a resource neither configured nor with
// state.
type unknownResourceError string

func (e unknownResourceError) Error() string { return string(e) }

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
	return unknownResourceError(msg)
}

// mkdirLocks are the resources bound to a mkdir slot, from the
// configuration (nil when it cannot be loaded: statuses reports that).
func (a *app) mkdirLocks() map[string]string {
	l, err := a.load()
	if err != nil {
		return nil
	}
	return l.Config.MkdirLocks()
}

// toSlotsJSON and writeSlots read the mkdir slot of each resource locks
// binds to one.
func toSlotsJSON(project string, sts []governor.Status, locks map[string]string) slotsJSON {
	out := slotsJSON{Project: project, Resources: []resourceJSON{}}
	for _, st := range sts {
		m := mkdirSlot(locks, &st) // first: the wrapper's hold counts in use
		r := resourceJSON{Resource: st.Key.Resource, Limit: st.Limit, Used: st.Used, Free: max(st.Limit-st.Used, 0),
			DriftLimit: st.DriftLimit, Holders: []holderJSON{}, Waiters: []waiterJSON{}, Counters: counterMap(st.Counters),
			MkdirSlot: m, LimitSource: limitSource(st), ExpectedWait: toEstimateJSON(governor.ExpectedWait(st, 0)),
			Policy: st.Policy.Encode(), DriftPolicy: st.DriftPolicy, ClassUse: st.ClassUse(),
			Adaptive: st.Adaptive}
		if l := st.LiveLimit; l != nil {
			r.LiveLimit = &liveLimitJSON{Limit: l.Limit, By: l.By, SetAt: l.At.UTC()}
		}
		if p := st.Paused; p != nil {
			r.Paused = &pausedJSON{Since: p.Since.UTC(), By: p.By}
		}
		if st.CoolingOff() != "" {
			at := st.CoolOff.UTC()
			r.CoolOffUntil = &at
		}
		if !st.LastSignal.IsZero() {
			at := st.LastSignal.UTC()
			r.LastSignalAt = &at
		}
		for _, h := range st.Holders {
			r.Holders = append(r.Holders, holderJSON{LeaseID: h.LeaseID, Session: h.Session, Host: h.Host, PID: h.PID,
				GovernorPID: h.GovernorPID, CommandPID: h.CommandPID(), Processes: h.Processes(), Weight: h.Weight, Token: h.Token, AcquiredAt: h.AcquiredAt.UTC(), HeartbeatAt: h.Heartbeat.UTC(),
				ExpiresAt: h.Expires.UTC(), AgeSeconds: secs(st.Now.Sub(h.AcquiredAt)),
				HeartbeatSeconds: secs(st.Now.Sub(h.Heartbeat)), ExpiresInSeconds: secs(h.Expires.Sub(st.Now)), Command: h.Command,
				ProgressTimeoutSeconds: h.ProgressTimeout.Seconds(), Priority: h.Priority, FairKey: h.FairKey})
			if !h.Progress.IsZero() {
				at, age := h.Progress.UTC(), secs(st.Now.Sub(h.Progress))
				r.Holders[len(r.Holders)-1].ProgressAt, r.Holders[len(r.Holders)-1].ProgressSeconds = &at, &age
			}
			if !h.Cancelled.IsZero() {
				at := h.Cancelled.UTC()
				r.Holders[len(r.Holders)-1].CancelledAt = &at
			}
		}
		for i, wt := range st.Waiters {
			r.Waiters = append(r.Waiters, waiterJSON{Position: i + 1, ID: wt.ID, Session: wt.Session, Host: wt.Host,
				PID: wt.PID, GovernorPID: wt.GovernorPID, Processes: wt.Processes(), Weight: wt.Weight, EnqueuedAt: wt.EnqueuedAt.UTC(), WaitingSeconds: secs(st.Now.Sub(wt.EnqueuedAt)),
				Command: wt.Command, ExpectedWait: toEstimateJSON(governor.ExpectedWait(st, i+1)),
				Priority: wt.Priority, FairKey: wt.FairKey})
		}
		out.Resources = append(out.Resources, r)
	}
	return out
}

func counterMap(c governor.Counters) map[string]int {
	return map[string]int{"acquired": int(c.Acquired), "busy": int(c.Busy), "waited": int(c.Waited),
		"released": int(c.Released), "lost": int(c.Lost), "reclaimed_expired": int(c.ReclaimedExpiry),
		"reclaimed_owner_dead": int(c.ReclaimedDead), "takeovers": int(c.Takeovers)}
}

func secs(d time.Duration) float64 { return float64(d.Milliseconds()) / 1000 }

func writeSlots(w io.Writer, project string, sts []governor.Status, locks map[string]string) {
	if len(sts) == 0 {
		fmt.Fprintf(w, "project %s: no resources in use or configured\n", project)
		return
	}
	for i, st := range sts {
		if i > 0 {
			fmt.Fprintln(w)
		}
		m := mkdirSlot(locks, &st) // first: the wrapper's hold counts in use
		fmt.Fprintf(w, "%s  limit %d  in use %d  free %d  waiting %d%s", dash(st.Key.Resource), st.Limit, st.Used,
			max(st.Limit-st.Used, 0), len(st.Waiters), liveText(st))
		if st.DriftLimit != 0 {
			fmt.Fprintf(w, "  DRIFT: a process asked for limit %d", st.DriftLimit)
		}
		fmt.Fprintln(w)
		writePolicy(w, st)
		if p := st.Paused; p != nil {
			fmt.Fprintf(w, "  PAUSED since %s ago by %s: nothing new is granted until 'governor resume %s'\n",
				governor.Ago(st.Now.Sub(p.Since)), dash(p.By), dash(st.Key.Resource))
		}
		if e := governor.ExpectedWait(st, 0); !e.Fits {
			fmt.Fprintf(w, "  expected wait for a newcomer: %s\n", e)
		}
		writeSignals(w, st)
		writeMkdirSlot(w, m)
		if len(st.Holders) > 0 {
			tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "  HOLDER\tSESSION\tHOST\tPROCESSES\tWEIGHT\tAGE\tHEARTBEAT\tPROGRESS\tEXPIRES IN\tTOKEN\tCOMMAND"+classKeyHeader(st))
			for _, h := range st.Holders {
				fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%d\t%s\t%s ago\t%s\t%s\t%d\t%s%s\n", dash(h.LeaseID), dash(h.Session), dash(h.Host), h.Processes(),
					h.Weight, governor.Ago(st.Now.Sub(h.AcquiredAt)), governor.Ago(st.Now.Sub(h.Heartbeat)), progress(st.Now, h),
					governor.Ago(h.Expires.Sub(st.Now)), h.Token, dash(h.Command), classKey(st, h.Declaration))
			}
			tw.Flush()
			for _, h := range st.Holders {
				if !h.Cancelled.IsZero() {
					fmt.Fprintf(w, "  %s: cancelled in progress %s ago; held until its work has stopped and it is released\n",
						dash(h.LeaseID), governor.Ago(st.Now.Sub(h.Cancelled)))
				}
			}
		}
		if len(st.Waiters) > 0 {
			tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "  WAITER\tSESSION\tHOST\tPROCESSES\tWEIGHT\tWAITING FOR\tEXPECTED WAIT\tCOMMAND"+classKeyHeader(st))
			for i, wt := range st.Waiters {
				fmt.Fprintf(tw, "  %d. %s\t%s\t%s\t%s\t%d\t%s\t%s\t%s%s\n", i+1, dash(short(wt.ID)), dash(wt.Session), dash(wt.Host), wt.Processes(),
					wt.Weight, governor.Ago(st.Now.Sub(wt.EnqueuedAt)), governor.ExpectedWait(st, i+1), dash(wt.Command), classKey(st, wt.Declaration))
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
	s := governor.Ago(now.Sub(h.Progress)) + " ago"
	if h.ProgressTimeout > 0 {
		s += " /" + governor.Ago(h.ProgressTimeout)
	}
	return s
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// dash shows text another process wrote (sessions, hosts, commands, lease
// ids) in a table: "-" when empty, escaped for the terminal else.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return safetext.Escape(s)
}

// writeJSON writes v indented, with the characters a terminal would act
// on escaped (safetext.JSON): the data is unchanged, the display safe.
func writeJSON(w io.Writer, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(safetext.JSON(b.Bytes()))
	return err
}

// writePolicy writes the queue policy in force, each class's use with
// its reserve and cap, and a policy drift.
func writePolicy(w io.Writer, st governor.Status) {
	if !st.Policy.IsZero() {
		fmt.Fprintf(w, "  policy %s", st.Policy.Encode())
		use := st.ClassUse()
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
		fmt.Fprintf(w, "  DRIFT: a process asked for queue policy %q\n", st.DriftPolicy)
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
	return "\t" + dash(d.Priority) + "\t" + dash(d.FairKey)
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
		fmt.Fprintf(w, "  last rate-limit signal %s ago\n", governor.Ago(st.Now.Sub(st.LastSignal)))
	}
}
