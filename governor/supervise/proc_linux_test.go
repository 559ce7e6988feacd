//go:build linux

package supervise

import (
	"os/exec"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

func TestParseStat(t *testing.T) {
	// The layout of a real line, after session: tty_nr tpgid flags minflt
	// cminflt majflt cmajflt utime stime cutime cstime priority nice
	// num_threads itrealvalue starttime vsize ...
	tail := " 0 -1 4194304 97 0 0 0 0 0 0 0 20 0 1 0 123456 3133440"
	tests := []struct {
		in      string
		want    procStat
		wantErr bool
	}{
		{"42 (sleep) S 7 42 42" + tail, procStat{pid: 42, ppid: 7, pgid: 42, state: 'S', start: 123456}, false},
		{"42 (a b) c)) (d) Z 1 9 9" + tail, procStat{pid: 42, ppid: 1, pgid: 9, state: 'Z', start: 123456}, false},
		{"42 (sleep) S 7 42", procStat{}, true},
		{"42 sleep S 7 42 42" + tail, procStat{}, true},
		{"42 (sleep) S x 42 42" + tail, procStat{}, true},
	}
	for _, tt := range tests {
		got, err := parseStat(42, []byte(tt.in))
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("parseStat(%q) = %+v, %v; want %+v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestWithTreeID(t *testing.T) {
	tests := []struct {
		env  []string
		want []string
	}{
		{nil, []string{TreeEnv + "=b"}},
		{[]string{"A=1"}, []string{"A=1", TreeEnv + "=b"}},
		// An outer tree's id is kept, so that its supervisor still knows
		// these processes; the last duplicate wins, as in getenv.
		{[]string{TreeEnv + "=x", "A=1", TreeEnv + "=a"}, []string{"A=1", TreeEnv + "=a b"}},
	}
	for _, tt := range tests {
		if got := withTreeID(tt.env, "b"); !slices.Equal(got, tt.want) {
			t.Errorf("withTreeID(%q) = %q, want %q", tt.env, got, tt.want)
		}
	}
}

func TestChildInfo(t *testing.T) {
	c := exec.Command("sh", "-c", "exit 7")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, c.Process.Pid, &info, unix.WEXITED, nil); err != nil {
		t.Fatal(err)
	}
	if pid, status := childInfo(&info); int(pid) != c.Process.Pid || status != 7 {
		t.Fatalf("childInfo = pid %d status %d; want %d and 7", pid, status, c.Process.Pid)
	}
}
