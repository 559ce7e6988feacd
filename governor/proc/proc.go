// Package proc identifies processes and proves them dead.
//
// A process is named by its PID together with its start time (clock ticks
// after boot, /proc/PID/stat field 22), so a recycled PID never passes for
// the process that held a lease. Proofs hold only on the same host: the
// host id pairs the kernel's boot id with the PID namespace.
package proc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// StartTime returns the start time of pid in clock ticks after boot.
func StartTime(pid int) (uint64, error) {
	start, _, err := stat(pid)
	return start, err
}

// stat returns pid's start time and whether it is a zombie: dead, only
// not yet reaped by its parent.
func stat(pid int) (start uint64, zombie bool, err error) {
	b, err := ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false, err
	}
	start, err = parseStartTime(b)
	if err != nil {
		return 0, false, err
	}
	i := bytes.LastIndexByte(b, ')')
	f := strings.Fields(string(b[i+1:]))
	return start, len(f) > 0 && f[0] == "Z", nil
}

// parseStartTime reads field 22 of a /proc/PID/stat line. The command name
// (field 2) may hold spaces and parentheses, so fields are counted from the
// last ')'.
func parseStartTime(stat []byte) (uint64, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("proc: malformed stat line")
	}
	fields := strings.Fields(string(stat[i+1:]))
	// fields[0] is field 3 (state); field 22 is fields[19].
	if len(fields) < 20 {
		return 0, errors.New("proc: short stat line")
	}
	return strconv.ParseUint(fields[19], 10, 64)
}

// Verdict is the result of a liveness check.
type Verdict int

const (
	// Unknown: no proof either way (missing or zero pid, unreadable
	// state). The lease must wait for its TTL.
	Unknown Verdict = iota
	// Alive: the process exists and is the one recorded (or exists and
	// cannot be inspected: EPERM means alive). A zombie is dead.
	Alive
	// Dead: proven dead — no such pid, or the pid now names a process
	// with a different start time.
	Dead
)

func (v Verdict) String() string {
	switch v {
	case Alive:
		return "alive"
	case Dead:
		return "dead"
	}
	return "unknown"
}

// Check tells whether the process pid that started at start is alive.
// start 0 means the start time was not recorded: then only a missing pid
// is proof of death.
func Check(pid int, start uint64) Verdict {
	if pid <= 0 {
		return Unknown
	}
	err := syscall.Kill(pid, 0)
	switch {
	case err == nil, errors.Is(err, syscall.EPERM):
		// It exists. Is it the same process?
	case errors.Is(err, syscall.ESRCH):
		return Dead
	default:
		return Unknown
	}
	got, zombie, err := stat(pid)
	if err == nil && zombie && (start == 0 || got == start) {
		return Dead // exited; its parent has not reaped it yet
	}
	if start == 0 {
		return Alive
	}
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			// Exited between the two checks.
			if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
				return Dead
			}
		}
		return Alive // cannot inspect: assume alive
	}
	if got != start {
		return Dead
	}
	return Alive
}

// HostID names this kernel boot and PID namespace. Two processes with the
// same HostID see the same PIDs; a PID proof is valid only between them.
func HostID() string {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(boot)) + "/" + ns
}

// Self describes the calling process.
type Self struct {
	Host      string
	HostID    string
	PID       int
	StartTime uint64
}

// Current returns the calling process's identity.
func Current() Self {
	host, _ := os.Hostname()
	pid := os.Getpid()
	start, _ := StartTime(pid)
	return Self{Host: host, HostID: HostID(), PID: pid, StartTime: start}
}

// String is "host:pid".
func (s Self) String() string { return fmt.Sprintf("%s:%d", s.Host, s.PID) }

// EnvListHas reports whether the initial environment of pid has variable
// name listing word among its space-separated words. An unreadable
// environment (another user, a non-dumpable process, a zombie) has
// nothing.
func EnvListHas(pid int, name, word string) bool {
	b, err := ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	prefix := []byte(name + "=")
	for kv := range bytes.SplitSeq(b, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, prefix); ok {
			for _, f := range strings.Fields(string(v)) {
				if f == word {
					return true
				}
			}
		}
	}
	return false
}
