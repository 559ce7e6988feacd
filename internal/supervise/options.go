package supervise

import (
	"io"
	"os"
	"time"
)

// DefaultKillGrace is the time Stop waits between TERM and KILL when
// [Options.KillGrace] is zero.
const DefaultKillGrace = 5 * time.Second

// TreeEnv is the environment variable through which Start marks the
// processes of a tree, so that orphans re-parented to the supervisor can be
// told apart from unrelated children. Its value is a space-separated list of
// tree ids; Start appends the new tree's id to any value inherited from
// Options.Env, so that a supervisor of a supervisor also recognises them.
const TreeEnv = "GOVERNOR_SUPERVISE_TREE"

// Options describes the command to run. The zero value of every field but
// Args means the documented default.
type Options struct {
	// Args is the command line, executed as given (no shell). Args[0] is
	// looked up in the PATH of Env (of the current process when Env has
	// none) unless it contains a slash.
	Args []string

	// Env is the complete environment of the child; nil means the current
	// process's environment. Start adds TreeEnv to it.
	Env []string

	// Dir is the working directory of the child; empty means the current
	// directory.
	Dir string

	// Stdin, Stdout and Stderr are the child's standard streams; nil means
	// os.Stdin, os.Stdout and os.Stderr. An *os.File is passed to the child
	// as is, so the child gets the real descriptor (a terminal stays a
	// terminal). Any other reader or writer is connected through a pipe
	// copied by a goroutine; Wait returns after the copying has finished.
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer

	// KillGrace is the time Stop waits after TERM before it sends KILL;
	// zero means DefaultKillGrace.
	KillGrace time.Duration

	// ExtraFiles are inherited by the child as descriptors 3, 4, ... in
	// order. A nil entry is passed as a closed descriptor.
	ExtraFiles []*os.File

	// Cgroup names the cgroup v2 group Start makes for the tree inside the
	// caller's own group (proc.ChildCgroup tells its directory); empty means
	// "governor-" and the tree id. The tree is born in it, its death is
	// proven by it ("populated 0") and KILL reaches all of it at once,
	// processes that escaped attribution included. Where the group cannot
	// be made (no cgroup v2, no permission; always on macOS, and on Linux
	// where proc.Portable) the tree goes without one.
	Cgroup string

	// NoCgroup makes no group: the tree is followed by scans of the
	// process table alone.
	NoCgroup bool

	// Terminal, when set, is a terminal whose foreground process group is
	// the caller's: the tree's group is made its foreground group while
	// the tree runs, so that the command can read from it and gets its
	// signals (Ctrl-C), and the caller's group gets it back once the tree
	// is finished. Use ForegroundTerminal to find it.
	Terminal *os.File
}

func (o *Options) killGrace() time.Duration {
	if o.KillGrace > 0 {
		return o.KillGrace
	}
	return DefaultKillGrace
}
