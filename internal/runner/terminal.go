package runner

import "io"

// IsTerminal reports whether w is a terminal: where governor may draw
// (a status line, a redrawn screen) instead of writing plain lines.
func IsTerminal(w io.Writer) bool {
	_, ok := terminal(w)
	return ok
}
