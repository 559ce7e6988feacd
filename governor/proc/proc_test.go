package proc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

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
		if s, err := Stat(pid); err == nil && s.Zombie() {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	s, err := Stat(pid)
	start := s.Start
	if err != nil || !s.Zombie() {
		t.Fatalf("Stat(%d) = %+v, %v; want a zombie", pid, s, err)
	}
	if got := Check(pid, start); got != Dead {
		t.Fatalf("Check(zombie) = %v, want dead", got)
	}
	if got := Check(pid, 0); got != Dead {
		t.Fatalf("Check(zombie, no start) = %v, want dead", got)
	}
}

// Stat and List tell a child's parent, group, start time and state, and
// a PID that names nothing is ErrNoProcess.
func TestStatAndList(t *testing.T) {
	cmd := exec.Command("sleep", "100")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	pid := cmd.Process.Pid
	s, err := Stat(pid)
	if err != nil || s.PID != pid || s.PPID != os.Getpid() || s.PGID != pid || s.Start == 0 || s.Stopped() {
		t.Fatalf("Stat(child %d) = %+v, %v; want its parent, its own group, a start time", pid, s, err)
	}
	self, err := Stat(os.Getpid())
	if err != nil || self.Start > s.Start {
		t.Fatalf("Stat(self) = %+v, %v; want a start no later than the child's %d", self, err, s.Start)
	}
	all, err := List()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, i := range all {
		if i.PID == pid {
			found = i.PPID == s.PPID && i.PGID == s.PGID && i.Start == s.Start
		}
	}
	if !found {
		t.Errorf("List has no %+v", s)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 500; i++ {
		if s, err = Stat(pid); err != nil || s.Stopped() {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil || !s.Stopped() || s.Zombie() {
		t.Errorf("Stat(stopped child) = %+v, %v; want stopped, not a zombie", s, err)
	}
	_ = syscall.Kill(pid, syscall.SIGCONT)
	if _, err := Stat(1 << 30); !errors.Is(err, ErrNoProcess) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Stat(no such pid) = %v, want ErrNoProcess, an fs.ErrNotExist", err)
	}
}

// Kill signals a process only while its start time is the one given, the
// Linux way (pidfd) and the portable way (a check, then kill(2)).
func TestKill(t *testing.T) {
	for _, portable := range []string{"0", "1"} {
		t.Run("portable="+portable, func(t *testing.T) {
			t.Setenv(PortableEnv, portable)
			cmd := exec.Command("sleep", "100")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Wait()
			defer cmd.Process.Kill()
			pid := cmd.Process.Pid
			start, err := StartTime(pid)
			if err != nil {
				t.Fatal(err)
			}
			if err := Kill(pid, start+1, syscall.SIGKILL); !errors.Is(err, ErrNoProcess) {
				t.Fatalf("Kill(pid, another start) = %v, want ErrNoProcess", err)
			}
			if err := Kill(pid, start, 0); err != nil {
				t.Fatalf("Kill(pid, its start, 0) = %v", err)
			}
			if err := Kill(pid, start, syscall.SIGKILL); err != nil {
				t.Fatalf("Kill(pid, its start, KILL) = %v", err)
			}
			err = cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("child ended with %v, want SIGKILL", err)
			}
			if err := Kill(pid, start, syscall.SIGKILL); !errors.Is(err, ErrNoProcess) {
				t.Fatalf("Kill(reaped pid) = %v, want ErrNoProcess", err)
			}
		})
	}
}

// EnvListHas reads another process's initial environment.
func TestEnvListHas(t *testing.T) {
	cmd := exec.Command("sleep", "100")
	cmd.Env = append(os.Environ(), "GOVERNOR_PROC_TEST=a bee c")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	pid := cmd.Process.Pid
	// Until the child has exec'd, its environment is still ours: wait
	// (generously) for the first word before checking the others.
	for deadline := time.Now().Add(20 * time.Second); !EnvListHas(pid, "GOVERNOR_PROC_TEST", "a") && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	for _, w := range []string{"a", "bee", "c"} {
		if !EnvListHas(pid, "GOVERNOR_PROC_TEST", w) {
			t.Errorf("EnvListHas(%q) = false, want true", w)
		}
	}
	for _, w := range []string{"b", "", "a bee"} {
		if EnvListHas(pid, "GOVERNOR_PROC_TEST", w) {
			t.Errorf("EnvListHas(%q) = true, want false", w)
		}
	}
	if EnvListHas(pid, "GOVERNOR_PROC", "a") {
		t.Error("a prefix of the name matched")
	}
}

func TestProcargsEnv(t *testing.T) {
	rec := func(argc uint32, rest string) []byte {
		return append(binary.NativeEndian.AppendUint32(nil, argc), rest...)
	}
	tests := []struct {
		in   []byte
		want string
		err  bool
	}{
		{rec(2, "/bin/sleep\x00\x00\x00\x00sleep\x00100\x00A=1\x00B=2\x00\x00executable_path=/bin/sleep\x00"),
			"A=1\x00B=2\x00\x00executable_path=/bin/sleep\x00", false},
		{rec(0, "/x\x00E=1\x00"), "E=1\x00", false},
		{rec(3, "/x\x00\x00a\x00b\x00"), "", true}, // fewer arguments than argc
		{[]byte{1, 0}, "", true},
	}
	for _, tt := range tests {
		got, err := procargsEnv(tt.in)
		if (err != nil) != tt.err || string(got) != tt.want {
			t.Errorf("procargsEnv(%q) = %q, %v; want %q, error %v", tt.in, got, err, tt.want, tt.err)
		}
	}
}

func TestCheckPortableEnv(t *testing.T) {
	for v, ok := range map[string]bool{"": true, "0": true, "1": true, "true": false, "yes": false, " 1": false} {
		t.Setenv(PortableEnv, v)
		err := CheckPortableEnv()
		if (err == nil) != ok {
			t.Errorf("%s=%q: CheckPortableEnv() = %v, want ok %v", PortableEnv, v, err, ok)
		}
		if err != nil && !strings.Contains(err.Error(), fmt.Sprintf("%q", v)) {
			t.Errorf("the error %q does not name the value %q", err, v)
		}
	}
}
