//go:build linux || darwin

package supervise

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/governor-dev/governor/governor/proc"
)

// Scan intervals of the supervisor goroutine. While the leader runs and no
// stop is under way, a slow scan pins new descendants and reaps orphans that
// died; once the leader has exited or a stop is under way, scans start fast
// and back off.
//
// A scan lists every process on the machine (proc.List), so scans are
// spaced by at least minGap however many SIGCHLDs arrive.
const (
	trackInterval = time.Second
	fastInterval  = 5 * time.Millisecond
	slowInterval  = 200 * time.Millisecond
	minGap        = 5 * time.Millisecond
	// freezeBudget bounds how long a freeze waits for the tree to stop; a
	// process in uninterruptible sleep may never stop.
	freezeBudget = 250 * time.Millisecond
)

// A Tree is a running command and its descendants. Its methods are safe for
// concurrent use.
//
// Reaping design. Exactly one goroutine, the supervisor, reaps; it never
// waits for "any child", only for a process it has attributed to this tree
// and seen as a zombie child of its own (wait4 by pid), so other children
// of the program keep their statuses. A second goroutine waits for the
// leader's exit without reaping it (waitLeader), to close Done promptly.
// The leader is reaped last, after the rest of the tree has gone: until
// then it is an unreaped child (alive or zombie), its pid cannot be
// reused, and neither can the process-group id, which equals it. That is
// what makes kill(-pgid) safe at every moment a Tree sends it. Individual
// processes are signalled only under their identity (pid and start time):
// through pidfds opened while it was verified (Linux), or after checking
// it again just before kill(2) (proc.Kill; macOS, and Linux where
// proc.Portable), so a reused pid is never signalled.
type Tree struct {
	id       string // the tree id carried in TreeEnv
	pid      int    // the leader's pid, also the process-group id
	grace    time.Duration
	portable bool // without the Linux extras (proc.Portable)

	done    chan struct{}  // closed when the leader has exited
	empty   chan struct{}  // closed when the tree is empty and the leader reaped
	waited  chan struct{}  // closed when Wait's result is ready
	kick    chan struct{}  // wakes the supervisor for a scan
	sigchld chan os.Signal // SIGCHLD, notified from before the leader is started
	swept   chan struct{}  // closed after the first sweep that followed the leader's exit

	stopOnce sync.Once

	terminal *os.File // given to the tree's group while it runs (Options.Terminal)
	cg       *cgroup  // the tree's own cgroup v2 group; nil where none could be made

	// stdio plumbing for readers and writers that are not files
	copiers sync.WaitGroup
	stdin   io.Reader
	stdinW  *os.File
	outputs []output

	mu           sync.Mutex
	members      map[int]*member // attributed processes, leader included
	unmarked     map[int]uint64  // pid -> start of processes newer than the leader, read without TreeEnv's id
	leaderStart  uint64
	leaderExited bool
	leaderErr    error // the peek at the leader failed: someone else reaped it
	leaderReaped bool  // a job-control wait reaped the leader (portable path): leaderStatus is its status
	leaderStatus unix.WaitStatus
	stopping     bool
	stopReason   error
	finished     bool // the leader is reaped; nothing may be signalled
	exit         Exit
	err          error
}

// member is one attributed process, pinned by a pidfd with the Linux
// extras and known by its start time everywhere.
type member struct {
	pid    int
	start  uint64
	pgid   int // as of the latest scan
	fd     int // pidfd; -1 on the portable path
	leader bool
	exited bool // exited, and reaped or waiting for a parent other than us
}

// signal sends sig to m through its pidfd, or, on the portable path, if
// its pid still names the process that started at m.start.
func (m *member) signal(sig syscall.Signal) error {
	if m.fd >= 0 {
		return pidfdSignal(m.fd, sig)
	}
	return proc.Kill(m.pid, m.start, sig)
}

// Start runs opts.Args as the leader of a new process tree: in its own
// process group, and on Linux (unless proc.Portable) with SIGKILL as its
// parent-death signal, after making the calling process a child subreaper
// (see the package documentation for what that implies for the rest of
// the program).
//
// On success the command is running and the returned Tree supervises it
// until the tree is empty, whether or not anyone calls Wait. On failure
// nothing is left running and the error is
// ErrNotFound or ErrNotExecutable (wrapped with the command name) when the
// command cannot be found or executed, or another error when the process
// could not be created.
func Start(opts Options) (*Tree, error) {
	if len(opts.Args) == 0 {
		return nil, fmt.Errorf("%w: no command", ErrNotFound)
	}
	if opts.Dir != "" {
		if st, err := os.Stat(opts.Dir); err != nil {
			return nil, fmt.Errorf("supervise: working directory: %w", err)
		} else if !st.IsDir() {
			return nil, fmt.Errorf("supervise: working directory %s: %w", opts.Dir, syscall.ENOTDIR)
		}
	}
	if err := proc.CheckPortableEnv(); err != nil {
		return nil, fmt.Errorf("supervise: %w", err)
	}
	if _, err := proc.Stat(os.Getpid()); err != nil {
		return nil, fmt.Errorf("supervise: cannot read the process table to follow a process tree: %w", err)
	}
	env := opts.Env
	if env == nil {
		env = os.Environ()
	}
	pathEnv, ok := getenv(env, "PATH")
	if !ok {
		pathEnv = os.Getenv("PATH")
	}
	name := opts.Args[0]
	path, err := lookPath(name, pathEnv, opts.Dir)
	if err != nil {
		return nil, err
	}

	var idb [8]byte
	if _, err := rand.Read(idb[:]); err != nil {
		return nil, fmt.Errorf("supervise: tree id: %w", err)
	}
	t := &Tree{
		id:       fmt.Sprintf("%d-%s", os.Getpid(), hex.EncodeToString(idb[:])),
		grace:    opts.killGrace(),
		portable: proc.Portable(),
		done:     make(chan struct{}),
		empty:    make(chan struct{}),
		waited:   make(chan struct{}),
		kick:     make(chan struct{}, 1),
		swept:    make(chan struct{}),
		members:  make(map[int]*member),
		unmarked: make(map[int]uint64),
	}

	files, childEnds, err := t.stdio(opts)
	if err != nil {
		return nil, err
	}
	closeAll := func(fs []*os.File) {
		for _, f := range fs {
			f.Close()
		}
	}

	attr := &syscall.ProcAttr{
		Dir:   opts.Dir,
		Env:   withTreeID(env, t.id),
		Files: files,
		Sys:   &syscall.SysProcAttr{Setpgid: true},
	}
	if opts.Terminal != nil {
		attr.Sys.Foreground = true
		attr.Sys.Ctty = int(opts.Terminal.Fd())
		t.terminal = opts.Terminal
	}
	// Notified before the leader exists: a job stop that comes before the
	// supervisor goroutine runs must not be lost.
	t.sigchld = make(chan os.Signal, 1)
	signal.Notify(t.sigchld, syscall.SIGCHLD)
	pid, pidfd, err := t.launch(name, path, opts.Args, attr, opts)
	closeAll(childEnds)
	if err != nil {
		signal.Stop(t.sigchld)
		t.closeParentEnds()
		return nil, err
	}
	t.pid = pid
	leader := &member{pid: pid, pgid: pid, fd: pidfd, leader: true}
	if s, err := proc.Stat(pid); err == nil {
		leader.start = s.Start // our unreaped child: the pid is its own
	}
	t.leaderStart = leader.start
	t.members[pid] = leader
	t.startCopiers()

	go t.peekLeader(pidfd)
	go t.supervise()
	return t, nil
}

// A Member is a process of a tree, by its identity: its pid and its
// start time (proc.Info.Start), which together name it even after the pid
// is reused.
type Member struct {
	PID   int
	Start uint64
}

// Members returns the processes the tree has attributed so far, the
// leader first (its pid is also the tree's process-group id), or nil once
// the tree has finished. Another process (the watchdog) can find the tree
// by them after this one is stopped or killed, even where a descendant
// cleared its environment.
func (t *Tree) Members() []Member {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.finished {
		return nil
	}
	out := []Member{{t.pid, t.leaderStart}}
	for _, m := range t.members {
		if !m.leader && !m.exited {
			out = append(out, Member{m.pid, m.start})
		}
	}
	return out
}

// Done returns a channel closed when the leader has exited. Descendants may
// still be running then; Wait and Stop wait for them.
func (t *Tree) Done() <-chan struct{} { return t.done }

// Wait waits until the leader has exited and then until no process of the
// tree is left, and returns how the leader ended. Lingering descendants keep
// Wait waiting; call Stop to end them. It may be called any number of times,
// from any goroutine, and always returns the same result. It returns an
// error, with a zero Exit, only when the leader's status could not be
// collected because something else reaped it (see the package
// documentation); the tree has still been swept then.
func (t *Tree) Wait() (Exit, error) {
	<-t.waited
	return t.exit, t.err
}
