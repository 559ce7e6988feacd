package mkdirslot

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/governor-dev/governor/governor/proc"
	"github.com/governor-dev/governor/governor/safetext"
)

// What is read of a slot.d's files: the wrapper writes a pid and one
// command line; anything longer is not theirs to show.
const (
	maxPIDBytes = 32
	maxCmdBytes = 256
)

// State is what a slot.d says about its holder.
type State int

const (
	Free    State = iota // no slot.d
	Held                 // names a pid that is alive, or cannot be proven dead
	NoPID                // no pid file yet, or an empty or unreadable one
	Corrupt              // the pid file is not a positive number, or slot.d or pid is not what the wrapper makes
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

// Holder is what Inspect found in DIR. Raw and Cmd came from whoever made
// slot.d: they are escaped (safetext.Escape) and bounded, safe to print.
type Holder struct {
	Path  string // DIR/slot.d
	State State
	PID   int       // 0 unless the pid file holds a positive number
	Raw   string    // the pid file's content, trimmed, or why it was not read (shown when Corrupt)
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

// Inspect reads DIR's slot. It returns an error only when DIR cannot be
// used (ErrUntrustedDir: another user could change it) or slot.d cannot be
// examined; not when DIR or slot.d is absent: that is Free. Nothing is
// read through a symbolic link, nothing blocks, and at most a few hundred
// bytes are read.
func Inspect(dir string) (Holder, error) {
	h := Holder{Path: filepath.Join(dir, SlotName)}
	dfd, err := openDir(dir, false)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return h, nil
	case err != nil:
		return h, err
	}
	defer unix.Close(dfd)
	return readHolder(dfd, SlotName, h)
}

// readHolder fills h from slot.d, the directory name in dfd.
func readHolder(dfd int, name string, h Holder) (Holder, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			h.State = Free
			return h, nil
		}
		return h, fmt.Errorf("mkdirslot: %s: %w", h.Path, err)
	}
	h.Since = time.Unix(st.Mtim.Unix())
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		h.State, h.Raw = Corrupt, SlotName+" is not a directory"
		return h, nil
	}
	sfd, err := openSlotDir(dfd, name)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			h.State = Free
			return h, nil
		}
		h.State, h.Raw = Corrupt, SlotName+" cannot be opened: "+err.Error()
		return h, nil
	}
	defer unix.Close(sfd)
	if err := unix.Fstat(sfd, &st); err != nil {
		return h, fmt.Errorf("mkdirslot: %s: %w", h.Path, err)
	}
	if cmd, long, err := readSmall(sfd, CmdFile, st.Uid, maxCmdBytes); err == nil {
		h.Cmd = safetext.Escape(strings.TrimSpace(cmd))
		if long {
			h.Cmd += "…"
		}
	} else if nr := errNotRead(""); errors.As(err, &nr) {
		h.Cmd = "(" + string(nr) + ")"
	}
	raw, long, err := readSmall(sfd, PIDFile, st.Uid, maxPIDBytes)
	h.Raw = safetext.Escape(strings.TrimSpace(raw))
	nr := errNotRead("")
	switch {
	case errors.As(err, &nr):
		h.State, h.Raw = Corrupt, string(nr)
		return h, nil
	case err != nil || h.Raw == "":
		h.State = NoPID
		return h, nil
	case long:
		h.State, h.Raw = Corrupt, h.Raw+"…"
		return h, nil
	}
	pid, err := strconv.Atoi(h.Raw)
	if err != nil || pid <= 0 {
		h.State = Corrupt
		return h, nil
	}
	h.PID = pid
	h.State = Held
	if proc.Check(pid, 0) == proc.Dead {
		h.State = Dead
	}
	return h, nil
}
