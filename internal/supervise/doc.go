// Package supervise runs one command as a supervised process tree, for
// `governor run`.
//
// The command runs in its own process group. On Linux it also has SIGKILL
// as its parent-death signal and runs under a process that has made itself
// a child subreaper, so that descendants orphaned inside the tree are
// re-parented to the supervisor rather than to init. A [Tree] can forward
// signals to the whole tree and stop it as a whole (TERM, a grace period,
// then KILL), including descendants born during the grace period and
// descendants that left the process group with setsid(2). No process
// outside the tree is ever signalled because a PID was reused: individual
// processes are signalled under their identity (pid and start time), and
// the process group only while its leader is an unreaped child, which pins
// the group id.
//
// # One engine, thin system layers
//
// The engine (tree.go) is the same on every system. Below it, the
// package governor/proc lists processes with their parent, group, start
// time and state, identifies one process, and signals one under its
// identity; start_linux.go and start_darwin.go start the leader and wait
// for its exit. On Linux the engine adds extras where it can: pidfds, a
// child subreaper, a parent-death signal, a cgroup. With the environment
// variable proc.PortableEnv set to 1 it goes without them and takes the
// path macOS takes, through the same engine: the test suite runs the tree
// tests that way too, so that only the macOS system calls themselves are
// not run by it.
//
// # What belongs to a tree
//
// A process is attributed to a tree when it is the leader, is in the
// leader's process group, is a child of a process already attributed, or
// carries the tree's id in [TreeEnv] in its initial environment: a child
// of the supervisor (a re-parented orphan on Linux), or any process newer
// than the leader (an orphan re-parented to launchd on macOS, or to init
// on the portable path), read once. Start appends that id to the child's
// environment for this purpose. A descendant that both leaves the process
// group and clears its environment, and is orphaned before the
// supervisor's periodic scan has seen it, cannot be attributed by these
// rules; nor, on macOS, can one whose environment the kernel will not show
// (another user's, after a setuid exec).
//
// Where the supervisor may make a cgroup v2 group inside its own (root, or
// a delegated group; [Options.Cgroup]), the leader is born in the tree's
// own group and every descendant with it, and none can leave it: such a
// descendant is then held too. The tree is not finished while the group is
// populated, TERM reaches every member (through pidfds, each checked to be
// still in the group), and KILL is one write to cgroup.kill. Elsewhere the
// rules above are all there is.
//
// # Reaping, and living with other children
//
// On Linux, Start makes the calling process a child subreaper
// (PR_SET_CHILD_SUBREAPER) while at least one tree is running. The package
// never waits for "any child": it waits for one specific process at a
// time, by pid while it is an unreaped child of ours, and only for
// processes attributed to a tree. Other children of the program, for
// example those started with os/exec, are therefore never reaped here and
// their exit statuses are not stolen. Two constraints remain for a program
// that uses this package:
//
//   - It must not itself wait for any child (wait4(-1), waitpid(-1)) or set
//     SIGCHLD to SIG_IGN while a tree runs: that would steal the tree's
//     statuses, and Wait would then return an error.
//   - While a tree runs on Linux, orphans of its other children are
//     re-parented to it too (subreaping is process-wide). They are left
//     alone, never signalled, and once dead they stay zombies until the
//     program exits.
//
// # Platform
//
// Linux and macOS. On Linux, pidfds, waitid P_PIDFD and
// PR_SET_CHILD_SUBREAPER need Linux 5.4 or later; the cgroup layer needs
// cgroup.kill, Linux 5.14. On macOS (and on Linux with proc.PortableEnv)
// there is no cgroup, pidfd, subreaper or parent-death signal: processes
// are listed through sysctl kern.proc.all, each start time is checked
// again just before a signal (kill(2) has no pidfd to hold the identity
// meanwhile), the leader's exit is learnt through kqueue (EVFILT_PROC,
// NOTE_EXIT) and orphans are found by their environment. On other
// systems Start returns [errors.ErrUnsupported].
//
// Process-group kills do not cover descendants of a supervisor that is itself
// SIGKILLed: Pdeathsig reaches only the direct child, and macOS has none. A caller that must
// guarantee that no grandchild outlives it holds a lock file open in the
// child through [Options.ExtraFiles], which every descendant inherits.
package supervise
