package publish

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/governor-dev/governor/governor/proc"
)

const (
	tempPrefix = ".governor-publish."
	tempSuffix = ".tmp"
)

// hostTag names this boot and PID namespace in temporary file names: a
// PID proof holds only between processes with the same tag. "" when it
// cannot be known (no /proc): such files are never removed.
func hostTag() string {
	id := proc.HostID()
	if id == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:6])
}

// createTemp creates a new temporary file in dir, named for this process.
func createTemp(dir string, mode fs.FileMode) (*os.File, error) {
	tag := hostTag()
	if tag == "" {
		tag = "unknown"
	}
	pid := os.Getpid()
	start, _ := proc.StartTime(pid)
	for range 100 {
		var b [6]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, err
		}
		name := filepath.Join(dir, fmt.Sprintf("%s%s.%d.%d.%s%s", tempPrefix, tag, pid, start, hex.EncodeToString(b[:]), tempSuffix))
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, mode)
		if err == nil || !os.IsExist(err) {
			return f, err
		}
	}
	return nil, fmt.Errorf("no free temporary name in %s", dir)
}

// tempOwner parses a temporary file name: the host tag, pid and start
// time of the process that created it.
func tempOwner(name string) (tag string, pid int, start uint64, ok bool) {
	rest, ok1 := strings.CutPrefix(name, tempPrefix)
	rest, ok2 := strings.CutSuffix(rest, tempSuffix)
	f := strings.Split(rest, ".")
	if !ok1 || !ok2 || len(f) != 4 {
		return "", 0, 0, false
	}
	pid, err1 := strconv.Atoi(f[1])
	start, err2 := strconv.ParseUint(f[2], 10, 64)
	if err1 != nil || err2 != nil || pid <= 0 || start == 0 {
		return "", 0, 0, false
	}
	return f[0], pid, start, true
}

// removeStale removes the temporary files in dir whose creator is proven
// dead, and returns their names. Anything it cannot prove abandoned —
// another host or boot, a live or unknown process, a name it did not
// write, anything but a regular file — is left.
func removeStale(dir string) []string {
	tag := hostTag()
	if tag == "" {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var removed []string
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		t, pid, start, ok := tempOwner(e.Name())
		if !ok || t != tag || proc.Check(pid, start) != proc.Dead {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err == nil {
			removed = append(removed, e.Name())
		}
	}
	return removed
}
