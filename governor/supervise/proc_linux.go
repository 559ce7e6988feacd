//go:build linux

package supervise

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/governor-dev/governor/governor/proc"
)

// procStat is the part of /proc/PID/stat the supervisor needs. A process is
// identified by (pid, start): start is its start time in clock ticks since
// boot, which a later process reusing the pid would not share.
type procStat struct {
	pid, ppid, pgid int
	state           byte
	start           uint64
}

// stopped reports whether the process can no longer fork: it is stopped,
// traced, dead or a zombie.
func (s procStat) stopped() bool {
	switch s.state {
	case 'T', 't', 'Z', 'X', 'x':
		return true
	}
	return false
}

var errBadStat = errors.New("supervise: unparsable /proc stat")

// readStat reads /proc/PID/stat. It fails when the process is gone.
// The kernel makes the whole file at the first read, so one read into a
// buffer larger than any stat line is the whole file: a scan of the
// machine makes three system calls per process.
func readStat(pid int) (procStat, error) {
	var buf [1024]byte
	fd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/stat", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return procStat{}, err
	}
	n, err := unix.Read(fd, buf[:])
	unix.Close(fd)
	if err != nil {
		return procStat{}, err
	}
	if n == len(buf) {
		return procStat{}, errBadStat
	}
	return parseStat(pid, buf[:n])
}

// parseStat parses the content of /proc/PID/stat. The command name, in
// parentheses, may itself contain spaces and parentheses, so fields are
// counted from the last ')'.
func parseStat(pid int, b []byte) (procStat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return procStat{}, errBadStat
	}
	// Fields after the name: state ppid pgrp session tty_nr tpgid flags
	// minflt cminflt majflt cmajflt utime stime cutime cstime priority nice
	// num_threads itrealvalue starttime ...
	f := strings.Fields(string(b[i+2:]))
	if len(f) < 20 || len(f[0]) != 1 {
		return procStat{}, errBadStat
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgid, err2 := strconv.Atoi(f[2])
	start, err3 := strconv.ParseUint(f[19], 10, 64)
	if err := errors.Join(err1, err2, err3); err != nil {
		return procStat{}, errBadStat
	}
	return procStat{pid: pid, ppid: ppid, pgid: pgid, state: f[0][0], start: start}, nil
}

// snapshot reads the stat of every process on the machine. It is not
// atomic: processes come and go while it reads, so callers repeat it until
// the part they care about no longer changes. (/proc/PID/task/TID/children
// would be cheaper but needs CONFIG_PROC_CHILDREN, which many kernels lack.)
func snapshot() ([]procStat, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	out := make([]procStat, 0, len(names))
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil || pid <= 0 {
			continue
		}
		s, err := readStat(pid)
		if err != nil {
			continue // gone since the directory was read
		}
		out = append(out, s)
	}
	return out, nil
}

// hasTreeID reports whether the initial environment of process pid carries
// id in TreeEnv.
func hasTreeID(pid int, id string) bool { return proc.EnvListHas(pid, TreeEnv, id) }

// withTreeID returns a copy of env in which TreeEnv lists id after any ids it
// already had.
func withTreeID(env []string, id string) []string {
	out := make([]string, 0, len(env)+1)
	prev := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, TreeEnv+"="); ok {
			prev = v // the last one wins, as in getenv
			continue
		}
		out = append(out, kv)
	}
	return append(out, TreeEnv+"="+strings.TrimSpace(prev+" "+id))
}
