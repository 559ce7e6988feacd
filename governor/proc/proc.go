// Package proc identifies processes and proves them dead.
//
// A process is named by its PID together with its start time (Info.Start:
// /proc/PID/stat on Linux, sysctl kern.proc.pid on macOS), so a recycled
// PID never passes for the process that held a lease. Proofs hold only on
// the same host: the host id pairs the kernel's boot id with the PID
// namespace.
//
// The package is also the one layer through which governor lists,
// identifies and signals processes (List, Stat, Kill) and reads who holds
// file locks (Locks, from /proc/locks), with one file per system: what
// runs above it is the same code on Linux and macOS.
package proc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
)

// StartTime returns the start time of pid (see Info.Start).
func StartTime(pid int) (uint64, error) {
	s, err := Stat(pid)
	return s.Start, err
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
	s, err := Stat(pid)
	got := s.Start
	if err == nil && s.Zombie() && (start == 0 || got == start) {
		return Dead // exited; its parent has not reaped it yet
	}
	if start == 0 {
		return Alive
	}
	if err != nil {
		if gone(err) {
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
	has, _ := EnvListLookup(pid, name, word)
	return has
}

// EnvListLookup is EnvListHas, and whether the environment was read at
// all (read): an environment that could not be read, or read empty,
// tells nothing. Linux shows a process in the middle of an exec with no
// environment (the new memory's bounds are set after the switch to it),
// so a caller that remembers a "no" must not remember that one.
func EnvListLookup(pid int, name, word string) (has, read bool) {
	b, err := environ(pid)
	if err != nil || len(b) == 0 {
		return false, false
	}
	prefix := []byte(name + "=")
	for kv := range bytes.SplitSeq(b, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, prefix); ok {
			for _, f := range strings.Fields(string(v)) {
				if f == word {
					return true, true
				}
			}
		}
	}
	return false, true
}
