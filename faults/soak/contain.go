//go:build linux

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"syscall"
)

// How the soak ends with everything it started, killed -9 too.
//
// As root it runs inside a PID and a mount namespace of its own: the
// command started (the outer process) starts itself again as the
// namespace's init, with a parent-death signal, and the init starts the
// soak proper, reaps what is orphaned in the namespace, and exits with
// the soak's status. When the outer process or the init dies (kill -9
// too), the kernel kills every process of the namespace (shell loops,
// clients, bridges, redis-server, orphaned watchdogs, a process the soak
// had stopped) and the tmpfs of the full-disk fault goes with the mount
// namespace. Not root, every process the soak starts gets a parent-death
// signal (start); what they start in turn ends by its own bounds.
//
// containEnv says which of the three a process is.
const containEnv = "SOAK_CONTAINED"

// contain runs the outer process's or the init's part and reports the
// exit status, or ok false in the soak proper, which goes on.
func contain() (code int, done bool) {
	switch os.Getenv(containEnv) {
	case "":
		if os.Geteuid() != 0 {
			fmt.Println("soak: not root: no namespace of its own; its children get a parent-death signal, what they start ends by its own bounds")
			return 0, false
		}
		return startAgain("init", &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID,
			// Unshared in the child, which also makes every mount private
			// to it: the tmpfs and the /proc below are not seen outside.
			Unshareflags: syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}), true
	case "init":
		// The namespace's processes, not the machine's: the soak finds
		// its own in /proc, by their pids in the namespace.
		if err := syscall.Mount("proc", "/proc", "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
			fmt.Fprintln(os.Stderr, "soak: mount /proc in its namespace:", err)
			return 2, true
		}
		return startAgain("soak", nil), true
	}
	return 0, false
}

// startAgain starts this program with the same arguments as role,
// passes SIGINT and SIGTERM on to it, reaps every child (an init reaps
// what is orphaned in its namespace), and returns its exit status.
func startAgain(role string, attr *syscall.SysProcAttr) int {
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		return 2
	}
	c := exec.Command(self, os.Args[1:]...)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	c.Env = append(os.Environ(), containEnv+"="+role)
	c.SysProcAttr = attr
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	if err := start(c); err != nil {
		fmt.Fprintln(os.Stderr, "soak: start its namespace:", err)
		return 2
	}
	go func() {
		for sig := range sigs {
			_ = c.Process.Signal(sig)
		}
	}()
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "soak: wait:", err)
			return 2
		}
		if pid != c.Process.Pid {
			continue
		}
		if ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ws.ExitStatus()
	}
}

// spawns are the process starts of the soak, done by spawner.
var spawns = make(chan spawnReq)

type spawnReq struct {
	c   *exec.Cmd
	err chan error
}

func init() { go spawner() }

// spawner starts processes from one OS thread that lives as long as the
// soak: a parent-death signal fires when the thread that forked the
// child ends, not the process, and the Go runtime ends a thread whose
// goroutine exits locked to it.
func spawner() {
	runtime.LockOSThread() // never unlocked
	for r := range spawns {
		r.err <- r.c.Start()
	}
}

// start starts c with a parent-death signal (SIGKILL unless c asks for
// another), from the spawner's thread.
func start(c *exec.Cmd) error {
	if c.SysProcAttr == nil {
		c.SysProcAttr = &syscall.SysProcAttr{}
	}
	if c.SysProcAttr.Pdeathsig == 0 {
		c.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	r := spawnReq{c: c, err: make(chan error, 1)}
	spawns <- r
	return <-r.err
}

// runCmd is c.Run, started by start.
func runCmd(c *exec.Cmd) error {
	if err := start(c); err != nil {
		return err
	}
	return c.Wait()
}

// output is c.Output, started by start.
func output(c *exec.Cmd) ([]byte, error) {
	var out bytes.Buffer
	c.Stdout = &out
	err := runCmd(c)
	return out.Bytes(), err
}

// combinedOutput is c.CombinedOutput, started by start.
func combinedOutput(c *exec.Cmd) ([]byte, error) {
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	err := runCmd(c)
	return out.Bytes(), err
}
