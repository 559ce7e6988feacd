package proc_test

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor/proc"
)

// EnvListLookup tells an environment read without the word from one that
// could not be read or was read empty (a zombie's, as an exec's middle
// shows it): only the first may be remembered as "not marked".
func TestEnvListLookup(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	cmd.Env = append(os.Environ(), "GOVERNOR_TEST_LIST=a tree7 b")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	pid := cmd.Process.Pid
	deadline := time.Now().Add(30 * time.Second)
	for {
		if has, read := proc.EnvListLookup(pid, "GOVERNOR_TEST_LIST", "tree7"); has && read {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the child's environment never showed GOVERNOR_TEST_LIST")
		}
		time.Sleep(5 * time.Millisecond) // until the child has exec'd
	}
	if has, read := proc.EnvListLookup(pid, "GOVERNOR_TEST_LIST", "tree"); has || !read {
		t.Errorf("a word the list lacks: has %v read %v; want false, true", has, read)
	}
	// A zombie (killed, not yet reaped) shows an empty environment.
	if err := cmd.Process.Signal(os.Kill); err != nil {
		t.Fatal(err)
	}
	for {
		if s, err := proc.Stat(pid); err == nil && s.Zombie() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the child never became a zombie")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if has, read := proc.EnvListLookup(pid, "GOVERNOR_TEST_LIST", "tree7"); has || read {
		t.Errorf("a zombie: has %v read %v; want false, false (nothing known)", has, read)
	}
	if proc.EnvListHas(pid, "GOVERNOR_TEST_LIST", "tree7") {
		t.Error("EnvListHas of a zombie: true")
	}
}
