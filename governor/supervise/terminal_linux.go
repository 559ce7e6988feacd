package supervise

import (
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// ForegroundTerminal returns f when it is a terminal whose foreground
// process group is the calling process's: then a command run from it can
// be given the terminal (Options.Terminal). It returns nil otherwise — not
// a terminal, or governor itself runs in the background.
func ForegroundTerminal(f *os.File) *os.File {
	if f == nil {
		return nil
	}
	fd := int(f.Fd())
	if _, err := unix.IoctlGetTermios(fd, unix.TCGETS); err != nil {
		return nil
	}
	pgrp, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
	if err != nil || pgrp != unix.Getpgrp() {
		return nil
	}
	return f
}

// takeTerminal makes the caller's process group the terminal's foreground
// group again. A background group that does so gets SIGTTOU, which is
// ignored for the call.
func takeTerminal(f *os.File) {
	if !signal.Ignored(syscall.SIGTTOU) {
		signal.Ignore(syscall.SIGTTOU)
		defer signal.Reset(syscall.SIGTTOU)
	}
	_ = unix.IoctlSetPointerInt(int(f.Fd()), unix.TIOCSPGRP, unix.Getpgrp())
}
