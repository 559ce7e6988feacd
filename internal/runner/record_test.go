package runner_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/acquire"
	"github.com/governor-dev/governor/internal/leasetest"
	"github.com/governor-dev/governor/internal/runner"
	"github.com/governor-dev/governor/internal/runner/recordtest"
	"github.com/governor-dev/governor/internal/usertest"
)

// The grant record is on file before the command starts, with the wait on
// the monotonic clock; the end record follows it and repeats it.
func TestRunGrantRecordBeforeCommand(t *testing.T) {
	f := newFixture(t)
	g := f.governor(t, governor.Options{})
	defer g.Close()
	l := leasetest.HoldHeavy(t, g)
	o, stdout, stderr := f.options(t, "sh", "-c", `cat "$0"`)
	o.Args = append(o.Args, o.Record)
	o.IfBusy = acquire.IfBusyWait
	go func() {
		// Release once the run waits: its wait is then more than zero.
		for range 500 {
			if st, err := g.Status(context.Background(), "heavy"); err == nil && len(st.Waiters) == 1 {
				break
			}
			pause := time.NewTimer(10 * time.Millisecond)
			<-pause.C
		}
		_ = l.Release()
	}()
	if code := runner.Run(context.Background(), o); code != 0 {
		t.Fatalf("exit %d; stderr %s", code, stderr)
	}
	seen, err := runner.ReadRecords(stdout)
	if err != nil || len(seen) != 1 || seen[0].Kind != runner.KindGrant {
		t.Fatalf("the command saw records %+v (%v), want the grant record", seen, err)
	}
	grant := seen[0]
	if grant.WaitSeconds <= 0 || grant.Nested || grant.Resources[0].Lease == "" || grant.Granted.Before(grant.Start) ||
		grant.Outcome != "" || !grant.End.IsZero() {
		t.Fatalf("grant record %+v", grant)
	}
	all := recordtest.All(t, o.Record)
	if len(all) != 2 || all[1].Kind != runner.KindEnd {
		t.Fatalf("records %+v", all)
	}
	end := all[1]
	if end.ID != grant.ID || end.WaitSeconds != grant.WaitSeconds || !end.Granted.Equal(grant.Granted) ||
		end.Resources[0].Lease != grant.Resources[0].Lease || end.Outcome != runner.OutcomeRan || end.End.Before(end.Granted) {
		t.Fatalf("end record %+v\ngrant record %+v", end, grant)
	}
	if inv := runner.Invocations(all); len(inv) != 1 || inv[0].Kind != runner.KindEnd {
		t.Fatalf("invocations %+v", inv)
	}
}

// The grant record carries no outcome, exit code or end; lines written
// before grant records existed (no "kind") read as end records; an
// unknown kind is an error naming the line.
func TestRecordSchema(t *testing.T) {
	b, err := json.Marshal(runner.Record{Kind: runner.KindGrant, ID: "x", Start: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"outcome", "exit_code", "end", "granted"} {
		if _, ok := m[k]; ok {
			t.Errorf("grant record %s has %q", b, k)
		}
	}
	old := `{"id":"a","host":"h","pid":1,"command":"true","resources":[],"nested":false,"wait_seconds":0.5,"outcome":"ran","exit_code":0,"start":"2026-01-01T00:00:00Z","end":"2026-01-01T00:00:01Z"}` + "\n"
	recs, err := runner.ReadRecords(strings.NewReader(old + string(b) + "\n"))
	if err != nil || len(recs) != 2 || recs[0].Kind != runner.KindEnd || recs[0].WaitSeconds != 0.5 || recs[1].Kind != runner.KindGrant {
		t.Fatalf("records %+v, %v", recs, err)
	}
	if inv := runner.Invocations(recs); len(inv) != 2 || inv[1].Kind != runner.KindGrant {
		t.Fatalf("invocations %+v: a grant without an end is a run that never ended", inv)
	}
	_, err = runner.ReadRecords(strings.NewReader(`{"kind":"middle","id":"a"}` + "\n"))
	if err == nil || !strings.Contains(err.Error(), `kind "middle"`) || !strings.Contains(err.Error(), `"grant"`) {
		t.Fatalf("unknown kind: %v", err)
	}
}

// --record never follows a symbolic link, never blocks on a FIFO, refuses
// anything but a regular file naming the path and what is allowed, and
// creates the file 0600.
func TestRecordFileIsSafe(t *testing.T) {
	f := newFixture(t)
	dir := t.TempDir()

	o, _, stderr := f.options(t, "true")
	if code := runner.Run(context.Background(), o); code != 0 {
		t.Fatalf("exit %d; stderr %s", code, stderr)
	}
	fi, err := os.Stat(o.Record)
	if err != nil {
		t.Fatal(err)
	}
	if m := fi.Mode().Perm(); m != 0o600 {
		t.Errorf("record file created %v, want 0600", m)
	}

	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("precious\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.jsonl")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	fifoRead := filepath.Join(dir, "fifo-with-reader.jsonl")
	if err := syscall.Mkfifo(fifoRead, 0o600); err != nil {
		t.Fatal(err)
	}
	reader, err := os.OpenFile(fifoRead, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	for _, tc := range []struct{ path, what string }{
		{link, "a symbolic link"},
		{fifo, "a FIFO"},
		{fifoRead, "a FIFO"},
		{dir, "a directory"},
	} {
		o, stdout, stderr := f.options(t, "echo", "ran")
		o.Record = tc.path
		done := make(chan int, 1)
		go func() { done <- runner.Run(context.Background(), o) }()
		select {
		case code := <-done:
			want := "--record " + tc.path + " is " + tc.what
			if code != runner.ExitFailure || !strings.Contains(stderr.String(), want) || !strings.Contains(stderr.String(), "allowed: a regular file") {
				t.Errorf("%s: exit %d, stderr %q; want 125 and %q", tc.what, code, stderr, want)
			}
			if stdout.Len() != 0 {
				t.Errorf("%s: the command ran", tc.what)
			}
		case <-time.After(20 * time.Second):
			// Unblock the open so that the test can end.
			if r, err := os.OpenFile(tc.path, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
				defer r.Close()
			}
			t.Fatalf("%s: run hangs opening the record file", tc.what)
		}
	}
	if b, err := os.ReadFile(target); err != nil || !bytes.Equal(b, []byte("precious\n")) {
		t.Fatalf("the symlink's target was written: %q, %v", b, err)
	}
}

// --record refuses to append to an existing file another user owns or
// can write (issue 24.20): that user could forge or rewrite the records.
// The file is left as it was and the command does not run; a file of
// one's own that nobody else can write is appended to.
func TestRecordRefusesAnotherUsersFile(t *testing.T) {
	u := usertest.New(t)
	f := newFixture(t)
	dir := usertest.SharedDir(t)
	theirs := filepath.Join(dir, "theirs.jsonl")
	if out, err := u.Command("sh", "-c", `echo '{"forged":1}' > "$0" && chmod 644 "$0"`, theirs).CombinedOutput(); err != nil {
		t.Fatalf("as %s: %v %s", u.Name, err, out)
	}
	writable := filepath.Join(dir, "writable.jsonl")
	if err := os.WriteFile(writable, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chmod(writable, 0o666)
	for _, tc := range []struct{ path, what string }{
		{theirs, "owned by uid " + strconv.Itoa(u.UID)},
		{writable, "writable by group or others (mode 0666)"},
	} {
		before, _ := os.ReadFile(tc.path)
		o, stdout, stderr := f.options(t, "echo", "ran")
		o.Record = tc.path
		code := runner.Run(context.Background(), o)
		if code != runner.ExitFailure || !strings.Contains(stderr.String(), "--record "+tc.path+" is "+tc.what) || stdout.Len() != 0 {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 125 naming %q, the command not run", tc.path, code, stdout, stderr, tc.what)
		}
		if after, _ := os.ReadFile(tc.path); !bytes.Equal(before, after) {
			t.Errorf("%s was written: %q", tc.path, after)
		}
	}
	mine := filepath.Join(dir, "mine.jsonl")
	if err := os.WriteFile(mine, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	o, _, stderr := f.options(t, "true")
	o.Record = mine
	if code := runner.Run(context.Background(), o); code != 0 || len(recordtest.All(t, mine)) != 2 {
		t.Errorf("own file: exit %d, stderr %s; want 0 and two records", code, stderr)
	}
}
