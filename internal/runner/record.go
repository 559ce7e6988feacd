package runner

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/governor-dev/governor/governor/fstrust"
	"github.com/governor-dev/governor/internal/acquire"
)

// Outcome says how a run ended, in its end Record.
type Outcome string

const (
	OutcomeRan         Outcome = "ran"         // the command ran; ExitCode is its own
	OutcomeSkipped     Outcome = "skipped"     // busy with --if-busy skip (75)
	OutcomeBusy        Outcome = "busy"        // busy with --if-busy fail, or --wait-timeout passed (73)
	OutcomeSuperseded  Outcome = "superseded"  // replaced while waiting by a run with its --supersede key (76)
	OutcomeTimeout     Outcome = "timeout"     // --timeout passed; the tree was stopped (124)
	OutcomeLeaseLost   Outcome = "lease_lost"  // a lease was lost while running (122)
	OutcomeInterrupted Outcome = "interrupted" // a signal ended the run before the command started (128+N)
	OutcomeError       Outcome = "error"       // governor failed, or the command could not be started (125, 126, 127)
)

// RecordKind tells the two lines a run appends to its --record file apart.
type RecordKind string

const (
	// KindGrant is appended once every slot is in hand (acquired, or held
	// by an ancestor run) and before the command starts: the wait is a fact
	// from then on, so a run killed later, even with SIGKILL, still leaves
	// it. A grant record has no Outcome, ExitCode or End.
	KindGrant RecordKind = "grant"
	// KindEnd is appended when the run has released everything. It
	// repeats what the grant record said and adds Outcome, ExitCode and
	// End. A run refused or failed before the grant writes only this one.
	// Lines without "kind" (written before grant records existed) are end
	// records.
	KindEnd RecordKind = "end"
)

// Record is a JSON object appended to the --record file: a grant record
// and an end record per invocation, with the same ID.
type Record struct {
	Kind RecordKind `json:"kind"`
	// ID is the invocation id, also the last of GOVERNOR_RUN_IDS in the
	// command's environment.
	ID      string `json:"id"`
	Project string `json:"project,omitempty"`
	Session string `json:"session,omitempty"`
	Host    string `json:"host"`
	PID     int    `json:"pid"`
	// Command is the command line, secrets redacted.
	Command   string           `json:"command"`
	Resources []RecordResource `json:"resources"`
	// Nested is true when every resource was already held by an ancestor
	// run: this invocation acquired nothing, and WaitSeconds is 0.
	Nested bool `json:"nested"`
	// OuterRun is the id of the governor run this invocation runs inside
	// (the innermost one, the last of GOVERNOR_RUN_IDS it inherited), ""
	// at top level. Its records carry its own wait; a resource nested in
	// it has the lease that an ancestor's records list as acquired (not
	// nested).
	OuterRun string `json:"outer_run,omitempty"`
	// WaitSeconds is the time this invocation itself spent acquiring,
	// on the monotonic clock.
	WaitSeconds float64 `json:"wait_seconds"`
	Outcome     Outcome `json:"outcome,omitempty"`
	ExitCode    int     `json:"exit_code"`
	// Start, Granted and End are wall-clock instants (RFC 3339 with
	// nanoseconds): when governor started, when it had every slot (zero
	// when it never had), and when it had released everything.
	Start   time.Time `json:"start"`
	Granted time.Time `json:"granted,omitzero"`
	End     time.Time `json:"end"`
}

// MarshalJSON writes a grant record without the end record's fields
// (outcome, exit_code, end), which it cannot know yet.
func (r Record) MarshalJSON() ([]byte, error) {
	type plain Record
	if r.Kind != KindGrant {
		return json.Marshal(plain(r))
	}
	return json.Marshal(struct {
		plain
		ExitCode *int       `json:"exit_code,omitempty"`
		End      *time.Time `json:"end,omitempty"`
	}{plain: plain(r)})
}

// RecordResource is one resource of a Record, built by acquire.RecordOf
// for every way in (the bridge's records too).
type RecordResource = acquire.RecordResource

// openRecord opens path for appending: the last component is never
// followed if it is a symbolic link, the open never blocks (a FIFO with no
// reader would hang it), and anything but a regular file is refused, as is
// an existing file another user owns or can write (fstrust.FileProblem).
// A file it creates is 0600 (lines carry lease ids and tokens).
func openRecord(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_APPEND|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o600)
	if err != nil {
		if fi, lerr := os.Lstat(path); lerr == nil && !fi.Mode().IsRegular() {
			return nil, notRegular(path, fi.Mode())
		}
		return nil, fmt.Errorf("--record %s: %w", path, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("--record %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		fi, err := os.Lstat(path)
		if err != nil {
			return nil, fmt.Errorf("--record %s: not a regular file; allowed: a regular file, or a path where one can be created", path)
		}
		return nil, notRegular(path, fi.Mode())
	}
	if why := fstrust.FileProblem(st.Uid, uint32(st.Mode), os.Geteuid()); why != "" {
		unix.Close(fd)
		return nil, fmt.Errorf("--record %s is %s: another user could write or rewrite the records (and reads the lease ids and tokens they carry); "+
			"refusing to append to it: give a file of your own that only you can write (chmod go-w), or a new path", path, why)
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("--record %s: %w", path, err)
	}
	return os.NewFile(uintptr(fd), path), nil
}

// notRegular is the refusal of a --record path that is not a regular file.
func notRegular(path string, m fs.FileMode) error {
	what := "not a regular file"
	switch {
	case m&fs.ModeSymlink != 0:
		what = "a symbolic link (not followed)"
	case m&fs.ModeNamedPipe != 0:
		what = "a FIFO"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	case m&fs.ModeDevice != 0:
		what = "a device"
	case m.IsDir():
		what = "a directory"
	}
	return fmt.Errorf("--record %s is %s; allowed: a regular file, or a path where one can be created", path, what)
}

// appendRecord writes rec and a newline in exactly one write(2): on an
// O_APPEND descriptor the kernel places it at the end of the file as a
// whole, so concurrent writers never interleave. (os.File.Write would
// retry a short write with a second call, which could land after another
// writer's line.) A short write is an error.
func appendRecord(f *os.File, rec Record) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var n int
	var werr error
	if err := rc.Write(func(fd uintptr) bool {
		n, werr = syscall.Write(int(fd), b)
		return true
	}); err != nil {
		return err
	}
	if werr == nil && n != len(b) {
		werr = io.ErrShortWrite
	}
	return werr
}

// ReadRecords parses a --record file: one Record a line, grant and end
// records in the order they were written (a line without "kind" is an end
// record). A line that is not a Record is an error naming it.
func ReadRecords(r io.Reader) ([]Record, error) {
	var out []Record
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	for sc.Scan() {
		var rec Record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return out, fmt.Errorf("record line %q is not JSON: %w", sc.Text(), err)
		}
		switch rec.Kind {
		case "":
			rec.Kind = KindEnd
		case KindGrant, KindEnd:
		default:
			return out, fmt.Errorf("record line %q: kind %q; allowed: %q, %q", sc.Text(), rec.Kind, KindGrant, KindEnd)
		}
		out = append(out, rec)
	}
	return out, sc.Err()
}

// Invocations folds records into one per invocation, in the order of
// their first line: the end record when there is one, else the grant
// record (Kind KindGrant: the run is still running, or was killed before
// it could write its end).
func Invocations(recs []Record) []Record {
	var out []Record
	at := map[string]int{}
	for _, r := range recs {
		i, seen := at[r.ID]
		switch {
		case !seen:
			at[r.ID] = len(out)
			out = append(out, r)
		case r.Kind == KindEnd:
			out[i] = r
		}
	}
	return out
}
