package mkdirslot

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/governor-dev/governor/governor/proc"
)

// The wrapper's names.
const (
	SlotName = "slot.d" // the slot directory in DIR
	PIDFile  = "pid"    // in slot.d: the holder's pid
	CmdFile  = "cmd"    // in slot.d: the holder's command

	EnvDir  = "HEAVY_LOCK_DIR"  // moves DIR
	EnvHeld = "HEAVY_LOCK_HELD" // non-empty: an ancestor holds the slot
)

// PollInterval is how often Acquire looks at a slot held by someone else:
// a slot the wrapper frees is taken at most this long after.
const PollInterval = 250 * time.Millisecond

// StuckAfter is how long a slot.d may stay without a readable pid before
// it is reported as stuck. The gap it covers is the wrapper's, between
// its mkdir and its write of pid: milliseconds, unless the wrapper was
// killed in between.
const StuckAfter = 10 * time.Minute

// ErrNotOurs is returned by Release when slot.d is no longer the one this
// process made; it is left alone.
var ErrNotOurs = errors.New("mkdirslot: the slot is no longer ours")

// State is what a slot.d says about its holder.
type State int

const (
	Free    State = iota // no slot.d
	Held                 // names a pid that is alive, or cannot be proven dead
	NoPID                // no pid file yet, or an empty or unreadable one
	Corrupt              // the pid file is not a positive number, or slot.d is not a directory
	Dead                 // names a pid proven dead: reclaimable
)

func (s State) String() string {
	switch s {
	case Free:
		return "free"
	case Held:
		return "held"
	case NoPID:
		return "no pid"
	case Corrupt:
		return "corrupt pid"
	case Dead:
		return "holder dead"
	}
	return "unknown"
}

// Holder is what Inspect found in DIR.
type Holder struct {
	Path  string // DIR/slot.d
	State State
	PID   int       // 0 unless the pid file holds a positive number
	Raw   string    // the pid file's content, trimmed (shown when Corrupt)
	Cmd   string    // the cmd file's content, trimmed; "" if none
	Since time.Time // slot.d's modification time (zero when Free)
}

// Stuck reports whether h is a slot.d without a readable pid for longer
// than StuckAfter at now: a person must look at it (Remove clears it).
func (h Holder) Stuck(now time.Time) bool {
	return (h.State == NoPID || h.State == Corrupt) && now.Sub(h.Since) > StuckAfter
}

// Describe says who holds the slot, in one line.
func (h Holder) Describe() string {
	switch h.State {
	case Free:
		return h.Path + " is free"
	case NoPID:
		return fmt.Sprintf("%s has no readable pid yet (made %s); kept: it may be a wrapper between its mkdir and its write", h.Path, h.Since.Format(time.RFC3339))
	case Corrupt:
		return fmt.Sprintf("%s has a pid file that is not a positive pid (%q); kept", h.Path, h.Raw)
	}
	s := fmt.Sprintf("%s is held by pid %d", h.Path, h.PID)
	if h.State == Dead {
		s += " (dead)"
	}
	if h.Cmd != "" {
		s += ", cmd: " + h.Cmd
	}
	return s
}

// Inspect reads DIR's slot. It returns an error only when DIR or slot.d
// cannot be examined (not when slot.d is absent: that is Free).
func Inspect(dir string) (Holder, error) {
	h := Holder{Path: filepath.Join(dir, SlotName)}
	fi, err := os.Lstat(h.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return h, nil
	case err != nil:
		return h, fmt.Errorf("mkdirslot: %w", err)
	}
	h.Since = fi.ModTime()
	if !fi.IsDir() {
		h.State, h.Raw = Corrupt, "slot.d is not a directory"
		return h, nil
	}
	return readHolder(h.Path, h), nil
}

// readHolder fills h from the pid and cmd files in path.
func readHolder(path string, h Holder) Holder {
	if b, err := os.ReadFile(filepath.Join(path, CmdFile)); err == nil {
		h.Cmd = strings.TrimSpace(string(b))
	}
	b, err := os.ReadFile(filepath.Join(path, PIDFile))
	h.Raw = strings.TrimSpace(string(b))
	if err != nil || h.Raw == "" {
		h.State = NoPID
		return h
	}
	pid, err := strconv.Atoi(h.Raw)
	if err != nil || pid <= 0 {
		h.State = Corrupt
		return h
	}
	h.PID = pid
	h.State = Held
	if proc.Check(pid, 0) == proc.Dead {
		h.State = Dead
	}
	return h
}

// Slot is a slot this process made. Release it.
type Slot struct {
	dir string
	pid string // the pid file's content as written
}

// Path returns DIR/slot.d.
func (s *Slot) Path() string { return filepath.Join(s.dir, SlotName) }

// TryAcquire takes DIR's slot for pid (written to the pid file) running
// cmd (written to the cmd file), making DIR if needed. A slot.d naming a
// dead pid is reclaimed first (see the package doc). It returns the slot,
// or nil and the holder when someone else holds it, or an error when DIR
// cannot be used; it leaves nothing behind but the slot it returns.
func TryAcquire(dir string, pid int, cmd string) (*Slot, Holder, error) {
	if pid <= 0 {
		return nil, Holder{}, fmt.Errorf("mkdirslot: pid %d; give the holder's pid, 1 or more", pid)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, Holder{}, fmt.Errorf("mkdirslot: making the lock directory: %w", err)
	}
	path := filepath.Join(dir, SlotName)
	var h Holder
	for range 3 { // a reclaim or a release can race the mkdir; a few tries settle it
		err := os.Mkdir(path, 0o755)
		if err == nil {
			s := &Slot{dir: dir, pid: strconv.Itoa(pid) + "\n"}
			if err := s.write(cmd); err != nil {
				os.RemoveAll(path) // ours, without a pid: nobody else removes it
				return nil, Holder{}, err
			}
			return s, Holder{}, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, Holder{}, fmt.Errorf("mkdirslot: %w", err)
		}
		if h, err = Inspect(dir); err != nil {
			return nil, h, err
		}
		switch h.State {
		case Free:
			continue // released between the mkdir and the look
		case Dead:
			if err := reclaim(dir, h); err != nil {
				return nil, h, err
			}
			continue
		}
		return nil, h, nil
	}
	return nil, h, nil
}

// write writes the pid file (through a rename, so that a reader sees it
// whole or not at all) and the cmd file.
func (s *Slot) write(cmd string) error {
	tmp := filepath.Join(s.Path(), "."+PIDFile+".tmp")
	if err := os.WriteFile(filepath.Join(s.Path(), CmdFile), []byte(strings.ReplaceAll(cmd, "\n", " ")+"\n"), 0o644); err != nil {
		return fmt.Errorf("mkdirslot: writing cmd: %w", err)
	}
	if err := os.WriteFile(tmp, []byte(s.pid), 0o644); err != nil {
		return fmt.Errorf("mkdirslot: writing pid: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(s.Path(), PIDFile)); err != nil {
		return fmt.Errorf("mkdirslot: writing pid: %w", err)
	}
	return nil
}

// Acquire takes DIR's slot as TryAcquire does, waiting while someone else
// holds it: it looks again every PollInterval until ctx is done, and
// calls onWait (if set) with the holder each time the holder changes. It
// returns the slot, or ctx's error with nothing taken.
func Acquire(ctx context.Context, dir string, pid int, cmd string, onWait func(Holder)) (*Slot, error) {
	var last Holder
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.C:
		}
		s, h, err := TryAcquire(dir, pid, cmd)
		if s != nil || err != nil {
			return s, err
		}
		if onWait != nil && (h.State != last.State || h.PID != last.PID || h.Cmd != last.Cmd) {
			onWait(h)
		}
		last = h
		t.Reset(PollInterval)
	}
}

// Release removes slot.d if it is still the one s made (its pid file
// holds what s wrote), and returns ErrNotOurs, leaving it alone, if not.
func (s *Slot) Release() error {
	b, err := os.ReadFile(filepath.Join(s.Path(), PIDFile))
	if err != nil || string(b) != s.pid {
		return fmt.Errorf("%w: %s no longer has pid %s", ErrNotOurs, s.Path(), strings.TrimSpace(s.pid))
	}
	return remove(s.dir, "released")
}

// reclaim removes slot.d of a holder proven dead, h as Inspect saw it. It
// renames slot.d aside first and checks that what it renamed still names
// the dead pid; if not (someone replaced slot.d in between), it puts it
// back.
func reclaim(dir string, h Holder) error {
	path := filepath.Join(dir, SlotName)
	aside := filepath.Join(dir, SlotName+".reclaimed."+suffix())
	if err := os.Rename(path, aside); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // removed by someone else
		}
		return fmt.Errorf("mkdirslot: reclaiming %s of dead pid %d: %w", path, h.PID, err)
	}
	if got := readHolder(aside, Holder{}); got.PID != h.PID || got.State != Dead {
		if err := os.Rename(aside, path); err != nil {
			return fmt.Errorf("mkdirslot: %s changed while it was reclaimed (now pid %q) and could not be put back from %s: %w", path, got.Raw, aside, err)
		}
		return nil
	}
	return os.RemoveAll(aside)
}

// Remove removes DIR's slot.d whoever holds it, for a person who has
// checked that its holder is gone (governor takeover RESOURCE --force).
// It returns what slot.d held.
func Remove(dir string) (Holder, error) {
	h, err := Inspect(dir)
	if err != nil || h.State == Free {
		return h, err
	}
	return h, remove(dir, "removed")
}

// remove renames slot.d aside, so that nobody sees it half removed, and
// deletes it.
func remove(dir, why string) error {
	aside := filepath.Join(dir, SlotName+"."+why+"."+suffix())
	if err := os.Rename(filepath.Join(dir, SlotName), aside); err != nil {
		return fmt.Errorf("mkdirslot: removing %s: %w", filepath.Join(dir, SlotName), err)
	}
	return os.RemoveAll(aside)
}

func suffix() string {
	var b [6]byte
	rand.Read(b[:])
	return strconv.Itoa(os.Getpid()) + "." + hex.EncodeToString(b[:])
}
