package view

import (
	"fmt"
	"io"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/mkdirslot"
)

// MkdirSlot is the with-heavy-lock slot of a resource bound to one
// (resources.<name>.mkdir_lock), in `governor slots --json`.
type MkdirSlot struct {
	Path            string    `json:"path"`  // DIR/slot.d
	State           string    `json:"state"` // free, held, no pid, corrupt pid, holder dead
	PID             int       `json:"pid,omitempty"`
	Cmd             string    `json:"cmd,omitempty"`
	Since           time.Time `json:"since,omitzero"`
	OutsideGovernor bool      `json:"outside_governor"` // held, and no lease of the resource names its pid
	Stuck           bool      `json:"stuck"`            // no readable pid for longer than mkdirslot.StuckAfter
	Clear           string    `json:"clear,omitempty"`  // the command that clears a stuck one
}

// mkdirSlotOf reads the slot bound to st's resource, or nil if none is,
// and counts a hold outside governor in st.Used (mkdirslot.AddHold).
func mkdirSlotOf(locks map[string]string, st *governor.Status) *MkdirSlot {
	dir := locks[st.Key.Resource]
	if dir == "" {
		return nil
	}
	h, outside, err := mkdirslot.AddHold(st, dir)
	out := &MkdirSlot{Path: h.Path, State: h.State.String(), PID: h.PID, Cmd: h.Cmd, Since: h.Since.UTC(), OutsideGovernor: outside}
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
func writeMkdirSlot(w io.Writer, m *MkdirSlot) {
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
