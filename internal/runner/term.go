package runner

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// terminal returns w's descriptor when w is a terminal.
func terminal(w io.Writer) (int, bool) {
	f, ok := w.(*os.File)
	if !ok || f == nil {
		return -1, false
	}
	fd := int(f.Fd())
	if _, err := unix.IoctlGetTermios(fd, getTermios); err != nil {
		return -1, false
	}
	return fd, true
}

// columns returns the width of terminal fd, 0 when unknown.
func columns(fd int) int {
	ws, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ)
	if err != nil {
		return 0
	}
	return int(ws.Col)
}
