package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/mkdirslot"
)

// mkdirSlotJSON is the with-heavy-lock slot of a resource bound to one
// (resources.<name>.mkdir_lock), in `governor slots --json`.
type mkdirSlotJSON struct {
	Path            string    `json:"path"`  // DIR/slot.d
	State           string    `json:"state"` // free, held, no pid, corrupt pid, holder dead
	PID             int       `json:"pid,omitempty"`
	Cmd             string    `json:"cmd,omitempty"`
	Since           time.Time `json:"since,omitzero"`
	OutsideGovernor bool      `json:"outside_governor"` // held, and no lease of the resource names its pid
	Stuck           bool      `json:"stuck"`            // no readable pid for longer than mkdirslot.StuckAfter
	Clear           string    `json:"clear,omitempty"`  // the command that clears a stuck one
}

// mkdirSlot reads the slot bound to st's resource, or nil if none is,
// and counts a hold outside governor in st.Used (mkdirslot.AddHold).
func mkdirSlot(locks map[string]string, st *governor.Status) *mkdirSlotJSON {
	dir := locks[st.Key.Resource]
	if dir == "" {
		return nil
	}
	h, outside, err := mkdirslot.AddHold(st, dir)
	out := &mkdirSlotJSON{Path: h.Path, State: h.State.String(), PID: h.PID, Cmd: h.Cmd, Since: h.Since.UTC(), OutsideGovernor: outside}
	if err != nil {
		out.State = "unreadable: " + err.Error()
		return out
	}
	if h.State == mkdirslot.Free {
		out.Since = time.Time{}
		return out
	}
	if h.Stuck(time.Now()) {
		out.Stuck = true
		out.Clear = "governor takeover " + st.Key.Resource + " --force"
	}
	return out
}

// writeMkdirSlot writes the slot's line under its resource in `slots`.
func writeMkdirSlot(w io.Writer, m *mkdirSlotJSON) {
	if m == nil {
		return
	}
	fmt.Fprintf(w, "  mkdir slot %s: %s", m.Path, m.State)
	if m.PID != 0 {
		fmt.Fprintf(w, ", pid %d", m.PID)
	}
	if m.Cmd != "" {
		fmt.Fprintf(w, ", cmd: %s", m.Cmd)
	}
	if m.State != mkdirslot.Free.String() && m.OutsideGovernor {
		fmt.Fprint(w, "; HELD outside governor (with-heavy-lock)")
	}
	fmt.Fprintln(w)
	if m.Stuck {
		fmt.Fprintf(w, "  STUCK: no readable pid since %s (longer than %v); if no wrapper is running, clear it with: %s\n",
			m.Since.Format(time.RFC3339), mkdirslot.StuckAfter, m.Clear)
	}
}

// clearMkdirSlot is `governor takeover RESOURCE --force` for a resource
// bound to a mkdir slot, with no --lease and no --session: it removes a
// slot.d whose holder is not proven alive (no pid, a corrupt one, or a
// dead one). A live pid is refused: stopping it makes its wrapper remove
// slot.d.
func clearMkdirSlot(cmd *cobra.Command, resource, dir string) error {
	h, err := mkdirslot.Inspect(dir)
	switch {
	case err != nil:
		return exitWith(ExitFailure, err)
	case h.State == mkdirslot.Free:
		return exitWith(ExitBusy, fmt.Errorf("nothing to take over: %s", h.Describe()))
	case h.State == mkdirslot.Held:
		return exitWith(ExitBusy, fmt.Errorf("%s; pid %d is alive (or not ours to check): stop it, and its wrapper removes slot.d", h.Describe(), h.PID))
	}
	if _, err := mkdirslot.Remove(dir); err != nil {
		return exitWith(ExitFailure, err)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "removed %s (%s)\n", h.Path, h.State)
	return nil
}
