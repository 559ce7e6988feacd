package mkdirslot

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
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
// cannot be used (ErrUntrustedDir: another user could change it); it
// leaves nothing behind but the slot it returns.
func TryAcquire(dir string, pid int, cmd string) (*Slot, Holder, error) {
	if pid <= 0 {
		return nil, Holder{}, fmt.Errorf("mkdirslot: pid %d; give the holder's pid, 1 or more", pid)
	}
	dfd, err := openDir(dir, true)
	if err != nil {
		return nil, Holder{}, err
	}
	defer unix.Close(dfd)
	h := Holder{Path: filepath.Join(dir, SlotName)}
	for range 3 { // a reclaim or a release can race the mkdir; a few tries settle it
		err := unix.Mkdirat(dfd, SlotName, 0o755)
		if err == nil {
			s := &Slot{dir: dir, pid: strconv.Itoa(pid) + "\n"}
			if err := s.write(dfd, cmd); err != nil {
				_ = removeAt(dfd, SlotName) // ours, without a pid: nobody else removes it
				return nil, Holder{}, err
			}
			return s, Holder{}, nil
		}
		if !errors.Is(err, unix.EEXIST) {
			return nil, Holder{}, fmt.Errorf("mkdirslot: mkdir %s: %w", h.Path, err)
		}
		if h, err = readHolder(dfd, SlotName, Holder{Path: h.Path}); err != nil {
			return nil, h, err
		}
		switch h.State {
		case Free:
			continue // released between the mkdir and the look
		case Dead:
			if err := reclaim(dfd, h); err != nil {
				return nil, h, err
			}
			continue
		}
		return nil, h, nil
	}
	return nil, h, nil
}

// write writes the cmd file and the pid file in the slot.d just made in
// dfd, each created anew (O_EXCL, not following links); the pid file
// through a rename, so that a reader sees it whole or not at all.
func (s *Slot) write(dfd int, cmd string) error {
	sfd, err := openSlotDir(dfd, SlotName)
	if err != nil {
		return fmt.Errorf("mkdirslot: opening %s: %w", s.Path(), err)
	}
	defer unix.Close(sfd)
	var st unix.Stat_t
	if err := unix.Fstat(sfd, &st); err != nil {
		return fmt.Errorf("mkdirslot: %s: %w", s.Path(), err)
	}
	if int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("mkdirslot: %s changed after it was made (now owned by uid %d); not written", s.Path(), st.Uid)
	}
	if err := createFile(sfd, CmdFile, []byte(strings.ReplaceAll(cmd, "\n", " ")+"\n")); err != nil {
		return fmt.Errorf("mkdirslot: writing %s: %w", CmdFile, err)
	}
	tmp := "." + PIDFile + ".tmp"
	if err := createFile(sfd, tmp, []byte(s.pid)); err != nil {
		return fmt.Errorf("mkdirslot: writing %s: %w", PIDFile, err)
	}
	if err := unix.Renameat(sfd, tmp, sfd, PIDFile); err != nil {
		return fmt.Errorf("mkdirslot: writing %s: %w", PIDFile, err)
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
	dfd, err := openDir(s.dir, false)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	got := ""
	if sfd, err := openSlotDir(dfd, SlotName); err == nil {
		got, _, _ = readSmall(sfd, PIDFile, uint32(os.Geteuid()), maxPIDBytes)
		unix.Close(sfd)
	}
	if got != s.pid {
		return fmt.Errorf("%w: %s no longer has pid %s", ErrNotOurs, s.Path(), strings.TrimSpace(s.pid))
	}
	return remove(dfd, s.Path(), "released")
}

// reclaim removes slot.d (in dfd) of a holder proven dead, h as readHolder
// saw it. It renames slot.d aside first and checks that what it renamed
// still names the dead pid; if not (someone replaced slot.d in between),
// it puts it back.
func reclaim(dfd int, h Holder) error {
	aside := SlotName + ".reclaimed." + suffix()
	if err := unix.Renameat(dfd, SlotName, dfd, aside); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil // removed by someone else
		}
		return fmt.Errorf("mkdirslot: reclaiming %s of dead pid %d: %w", h.Path, h.PID, err)
	}
	if got, err := readHolder(dfd, aside, Holder{Path: h.Path}); err != nil || got.PID != h.PID || got.State != Dead {
		if err := unix.Renameat(dfd, aside, dfd, SlotName); err != nil {
			return fmt.Errorf("mkdirslot: %s changed while it was reclaimed (now pid %q) and could not be put back from %s: %w", h.Path, got.Raw, aside, err)
		}
		return nil
	}
	return removeAt(dfd, aside)
}

// Remove removes DIR's slot.d whoever holds it, for a person who has
// checked that its holder is gone (governor takeover RESOURCE --force).
// It returns what slot.d held.
func Remove(dir string) (Holder, error) {
	h, err := Inspect(dir)
	if err != nil || h.State == Free {
		return h, err
	}
	dfd, err := openDir(dir, false)
	if err != nil {
		return h, err
	}
	defer unix.Close(dfd)
	return h, remove(dfd, h.Path, "removed")
}

// remove renames slot.d (in dfd, path for messages) aside, so that nobody
// sees it half removed, and deletes it.
func remove(dfd int, path, why string) error {
	aside := SlotName + "." + why + "." + suffix()
	if err := unix.Renameat(dfd, SlotName, dfd, aside); err != nil {
		return fmt.Errorf("mkdirslot: removing %s: %w", path, err)
	}
	return removeAt(dfd, aside)
}

func suffix() string {
	var b [6]byte
	rand.Read(b[:])
	return strconv.Itoa(os.Getpid()) + "." + hex.EncodeToString(b[:])
}
