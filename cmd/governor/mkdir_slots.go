package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/governor-dev/governor/internal/exitcode"
	"github.com/governor-dev/governor/internal/mkdirslot"
)

// clearMkdirSlot is `governor takeover RESOURCE --force` for a resource
// bound to a mkdir slot, with no --lease and no --session: it removes a
// slot.d whose holder is not proven alive (no pid, a corrupt one, or a
// dead one). A live pid is refused: stopping it makes its wrapper remove
// slot.d.
func clearMkdirSlot(cmd *cobra.Command, resource, dir string) error {
	h, err := mkdirslot.Inspect(dir)
	switch {
	case err != nil:
		return exitWith(exitcode.Failure, err)
	case h.State == mkdirslot.Free:
		return exitWith(exitcode.Busy, fmt.Errorf("nothing to take over: %s", h.Describe()))
	case h.State == mkdirslot.Held:
		return exitWith(exitcode.Busy, fmt.Errorf("%s; pid %d is alive (or not ours to check): stop it, and its wrapper removes slot.d", h.Describe(), h.PID))
	}
	if _, err := mkdirslot.Remove(dir); err != nil {
		return exitWith(exitcode.Failure, err)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "removed %s (%s)\n", h.Path, h.State)
	return nil
}
