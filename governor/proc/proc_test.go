package proc

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"testing"
	"time"
)

func TestParseStartTime(t *testing.T) {
	line := []byte("1234 (a b) c)) S 1 1234 1234 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 987654 1000 10 18446744073709551615")
	got, err := parseStartTime(line)
	if err != nil || got != 987654 {
		t.Fatalf("parseStartTime = %d, %v; want 987654", got, err)
	}
	if _, err := parseStartTime([]byte("garbage")); err == nil {
		t.Fatal("want error for garbage")
	}
}

func TestCheck(t *testing.T) {
	self := Current()
	if self.StartTime == 0 || self.HostID == "" {
		t.Fatalf("Current() = %+v, want start time and host id", self)
	}
	tests := []struct {
		name  string
		pid   int
		start uint64
		want  Verdict
	}{
		{"self", self.PID, self.StartTime, Alive},
		{"self without start", self.PID, 0, Alive},
		{"pid reused", self.PID, self.StartTime + 1, Dead},
		{"zero pid", 0, 0, Unknown},
		{"negative pid", -5, 0, Unknown},
	}
	if os.Geteuid() != 0 {
		// pid 1 belongs to root: kill(1, 0) is EPERM, which means alive.
		tests = append(tests, struct {
			name  string
			pid   int
			start uint64
			want  Verdict
		}{"eperm", 1, 0, Alive})
	}
	for _, tt := range tests {
		if got := Check(tt.pid, tt.start); got != tt.want {
			t.Errorf("%s: Check(%d, %d) = %v, want %v", tt.name, tt.pid, tt.start, got, tt.want)
		}
	}
}

func TestCheckDeadChild(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if got := Check(cmd.Process.Pid, 0); got != Dead {
		t.Fatalf("Check(exited child) = %v, want dead", got)
	}
}

func TestCheckZombie(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	// Not reaped yet: a zombie until Wait.
	pid := cmd.Process.Pid
	for i := 0; i < 200; i++ {
		if _, z, err := stat(pid); err == nil && z {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	start, z, err := stat(pid)
	if err != nil || !z {
		t.Fatalf("stat(%d) = %v, %v; want a zombie", pid, z, err)
	}
	if got := Check(pid, start); got != Dead {
		t.Fatalf("Check(zombie) = %v, want dead", got)
	}
	if got := Check(pid, 0); got != Dead {
		t.Fatalf("Check(zombie, no start) = %v, want dead", got)
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
		// mappings; compare lengths loosely and prefixes exactly.
		n := min(len(got), len(want), 40)
		if len(got) == 0 || string(got[:n]) != string(want[:n]) {
			t.Errorf("%s: ReadFile %q..., os.ReadFile %q...", p, got[:n], want[:n])
		}
	}
	if _, err := ReadFile("/proc/0/stat"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: err = %v, want ErrNotExist", err)
	}
}
