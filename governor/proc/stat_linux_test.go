package proc

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"testing"
)

func TestParseStat(t *testing.T) {
	// The layout of a real line, after session: tty_nr tpgid flags minflt
	// cminflt majflt cmajflt utime stime cutime cstime priority nice
	// num_threads itrealvalue starttime vsize ...
	tail := " 0 -1 4194304 97 0 0 0 0 0 0 0 20 0 1 0 123456 3133440"
	tests := []struct {
		in      string
		want    Info
		wantErr bool
	}{
		{"42 (sleep) S 7 42 42" + tail, Info{PID: 42, PPID: 7, PGID: 42, State: 'S', Start: 123456}, false},
		{"42 (a b) c)) (d) Z 1 9 9" + tail, Info{PID: 42, PPID: 1, PGID: 9, State: 'Z', Start: 123456}, false},
		{"42 (sleep) S 7 42", Info{}, true},
		{"42 sleep S 7 42 42" + tail, Info{}, true},
		{"42 (sleep) S x 42 42" + tail, Info{}, true},
		{"garbage", Info{}, true},
	}
	for _, tt := range tests {
		got, err := parseStat(42, []byte(tt.in))
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("parseStat(%q) = %+v, %v; want %+v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestReadFileMatchesOS(t *testing.T) {
	// environ is usually larger than the first read buffer; maps larger
	// still.
	for _, p := range []string{"/proc/self/stat", "/proc/self/environ", "/proc/self/maps"} {
		got, err := ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		// stat and maps change between reads only in counters and new
		// mappings; compare lengths loosely and prefixes exactly. stat's
		// state, right after "pid (comm) ", changes too (R while this
		// thread runs, S when another thread of the test is sampled
		// descheduled): its prefix ends before the state.
		n := min(len(got), len(want), 40)
		if p == "/proc/self/stat" {
			n = min(n, bytes.LastIndexByte(want, ')')+1)
		}
		if len(got) == 0 || string(got[:n]) != string(want[:n]) {
			t.Errorf("%s: ReadFile %q..., os.ReadFile %q...", p, got[:n], want[:n])
		}
	}
	if _, err := ReadFile("/proc/0/stat"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: err = %v, want ErrNotExist", err)
	}
}
