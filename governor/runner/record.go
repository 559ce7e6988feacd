package runner

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"
)

// Outcome says how a run ended, in its Record.
type Outcome string

const (
	OutcomeRan         Outcome = "ran"         // the command ran; ExitCode is its own
	OutcomeSkipped     Outcome = "skipped"     // busy with --if-busy skip (75)
	OutcomeBusy        Outcome = "busy"        // busy with --if-busy fail, or --wait-timeout passed (73)
	OutcomeTimeout     Outcome = "timeout"     // --timeout passed; the tree was stopped (124)
	OutcomeLeaseLost   Outcome = "lease_lost"  // a lease was lost while running (122)
	OutcomeInterrupted Outcome = "interrupted" // a signal ended the run before the command started (128+N)
	OutcomeError       Outcome = "error"       // governor failed, or the command could not be started (125, 126, 127)
)

// Record is the JSON object appended to the --record file, one per
// invocation.
type Record struct {
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
	// WaitSeconds is the time this invocation itself spent acquiring,
	// on the monotonic clock.
	WaitSeconds float64 `json:"wait_seconds"`
	Outcome     Outcome `json:"outcome"`
	ExitCode    int     `json:"exit_code"`
	// Start and End are wall-clock instants (RFC 3339 with nanoseconds):
	// when governor started, and when it had released everything.
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

// RecordResource is one resource of a Record.
type RecordResource struct {
	Name   string `json:"name"`
	Weight int    `json:"weight"`
	Limit  int    `json:"limit"`
	// Nested is true when an ancestor run held it: this run neither
	// acquired nor released it, and Lease is the ancestor's.
	Nested bool   `json:"nested"`
	Lease  string `json:"lease,omitempty"`
	Token  int64  `json:"token,omitempty"`
}

// openRecord opens path for appending, creating it (0644 before umask).
func openRecord(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_CLOEXEC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("--record %s: %w", path, err)
	}
	return f, nil
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

// ReadRecords parses a --record file: one Record a line. A line that is
// not a Record is an error naming it.
func ReadRecords(r io.Reader) ([]Record, error) {
	var out []Record
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	for sc.Scan() {
		var rec Record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return out, fmt.Errorf("record line %q is not JSON: %w", sc.Text(), err)
		}
		out = append(out, rec)
	}
	return out, sc.Err()
}
