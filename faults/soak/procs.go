//go:build linux

package main

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/governor-dev/governor/governor/proc"
)

// ourProc is a living process of the soak's: its command line carries
// the soak's directory (the governor binary, the config, the work files
// and the client scripts are all in it; a shell loop has it as an
// argument), or it is a watchdog the soak's governor binary started
// (ourSelfExec).
type ourProc struct {
	proc.Info
	cmd  string // the command line, NUL-separated arguments joined by spaces
	kind string // governor run, watchdog, bridge, serve, work, python, node, shell, cli
}

// scan lists the soak's living processes (zombies left out).
func (s *soak) scan() []ourProc {
	all, _ := proc.List()
	var out []ourProc
	me := os.Getpid()
	for _, p := range all {
		if p.PID == me || p.Zombie() {
			continue
		}
		b, err := proc.ReadFile("/proc/" + strconv.Itoa(p.PID) + "/cmdline")
		if err != nil || !bytes.Contains(b, []byte(s.dir)) && !s.ourSelfExec(p.PID, b) {
			continue
		}
		cmd := strings.TrimSpace(string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})))
		out = append(out, ourProc{Info: p, cmd: cmd, kind: kindOf(s, b)})
	}
	return out
}

// selfExe is how governor starts itself again (runner.SelfExecutable):
// its watchdog's command line is "/proc/self/exe run --watchdog ID",
// which names neither the binary nor the soak's directory.
const selfExe = "/proc/self/exe"

// ourSelfExec reports whether pid, whose command line is cmdline, is the
// soak's governor binary started as selfExe (a watchdog).
func (s *soak) ourSelfExec(pid int, cmdline []byte) bool {
	if !bytes.HasPrefix(cmdline, []byte(selfExe+"\x00")) {
		return false
	}
	exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
	return err == nil && exe == s.bin
}

func kindOf(s *soak, cmdline []byte) string {
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	has := func(w string) bool {
		for _, a := range args {
			if a == w {
				return true
			}
		}
		return false
	}
	switch {
	case len(args) > 1 && args[0] == s.self && args[1] == workArg:
		return "work"
	case len(args) > 1 && args[0] == s.self && args[1] == holdArg:
		return "go hold"
	case len(args) > 1 && args[0] == s.self && args[1] == rateArg:
		return "go rate"
	case (args[0] == s.bin || args[0] == selfExe) && has("--watchdog"):
		return "watchdog"
	case args[0] == s.bin && has("bridge"):
		return "bridge"
	case args[0] == s.bin && has("serve"):
		return "serve"
	case args[0] == s.bin && has("run"):
		return "governor run"
	case args[0] == s.bin:
		return "cli"
	case strings.Contains(args[0], "python"):
		return "python"
	case strings.Contains(args[0], "node"):
		return "node"
	case strings.Contains(args[0], "bash"):
		return "shell"
	}
	return "other"
}

// descendants returns the pids whose chain of parents reaches root.
func descendants(all []proc.Info, root int) map[int]bool {
	children := map[int][]int{}
	for _, p := range all {
		children[p.PPID] = append(children[p.PPID], p.PID)
	}
	out := map[int]bool{}
	stack := []int{root}
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, c := range children[p] {
			if !out[c] {
				out[c] = true
				stack = append(stack, c)
			}
		}
	}
	return out
}

// sendTo sends sig to p under its identity (pid and start time).
func sendTo(p ourProc, sig syscall.Signal) error { return proc.Kill(p.PID, p.Start, sig) }

// killMarked SIGKILLs every process whose command line carries marker:
// what is left when the soak ends (after its checks) or is interrupted.
func killMarked(marker string) {
	all, _ := proc.List()
	for _, p := range all {
		b, err := proc.ReadFile("/proc/" + strconv.Itoa(p.PID) + "/cmdline")
		if err == nil && p.PID != os.Getpid() && bytes.Contains(b, []byte(marker)) {
			_ = proc.Kill(p.PID, p.Start, syscall.SIGKILL)
		}
	}
}

// cpuTicks is the utime+stime of pid in clock ticks, and its RSS in
// pages; ok false when it cannot be read.
func cpuTicks(pid int) (ticks, rssPages int64, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	// After the comm: state is field 3, utime 14, stime 15, rss 24.
	if len(f) < 22 {
		return 0, 0, false
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	rss, _ := strconv.ParseInt(f[21], 10, 64)
	return u + st, rss, true
}
