package proc

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// TestParseLocks: each lock held is read with its kind, mode, pid,
// device and inode; blocked requests, leases and blank lines show no
// lock; a line out of format is left out and named by the error, and
// the other lines' locks are still returned.
func TestParseLocks(t *testing.T) {
	flock := Lock{Kind: Flock, Mode: LockWrite, PID: 15133, Major: 0xfe, Minor: 0, Inode: 10011890}
	for _, c := range []struct {
		name    string
		locks   string
		want    []Lock
		wantErr string // in the error; "" for none
	}{
		{"empty", "", nil, ""},
		{"flock", "1: FLOCK  ADVISORY  WRITE 15133 fe:00:10011890 0 EOF\n", []Lock{flock}, ""},
		{"no final newline", "1: FLOCK  ADVISORY  WRITE 15133 fe:00:10011890 0 EOF", []Lock{flock}, ""},
		{"kinds and modes", "1: POSIX  ADVISORY  READ 7 103:02:42 0 99\n" +
			"2: OFDLCK ADVISORY  WRITE -1 00:2e:5 100 EOF\n" +
			"3: FLOCK  ADVISORY  READ 0 08:11:6 0 EOF\n",
			[]Lock{
				{Kind: Posix, Mode: LockRead, PID: 7, Major: 0x103, Minor: 2, Inode: 42},
				{Kind: OFD, Mode: LockWrite, PID: -1, Major: 0, Minor: 0x2e, Inode: 5},
				{Kind: Flock, Mode: LockRead, PID: 0, Major: 8, Minor: 0x11, Inode: 6},
			}, ""},
		{"blocked requests hold nothing", "1: FLOCK  ADVISORY  WRITE 15133 fe:00:10011890 0 EOF\n" +
			"1: -> FLOCK  ADVISORY  WRITE 222 fe:00:10011890 0 EOF\n" +
			"1:  -> FLOCK  ADVISORY  WRITE 223 fe:00:10011890 0 EOF\n", []Lock{flock}, ""},
		{"leases and others left out", "1: LEASE  ACTIVE    READ 9 fe:00:1 0 EOF\n" +
			"2: DELEG  BREAKING  UNLCK 9 fe:00:2 0 EOF\n" +
			"3: ACCESS ADVISORY  READ 9 fe:00:3 0 EOF\n" +
			"4: UNKNOWN UNKNOWN  READ 9 fe:00:4 0 EOF\n" +
			"\n" +
			"5: FLOCK  ADVISORY  WRITE 15133 fe:00:10011890 0 EOF\n", []Lock{flock}, ""},
		{"too few fields", "1: FLOCK ADVISORY WRITE 5 fe:00:1\n", nil, `line 1 "1: FLOCK ADVISORY WRITE 5 fe:00:1": 6 fields, want 8`},
		{"no id", "FLOCK ADVISORY WRITE 5 fe:00:1 0 EOF\n", nil, `line 1 "FLOCK ADVISORY WRITE 5 fe:00:1 0 EOF": want "ID: KIND ..."`},
		{"bad mode", "1: FLOCK ADVISORY UNLCK 5 fe:00:1 0 EOF\n", nil, `mode "UNLCK", want READ or WRITE`},
		{"bad pid", "1: FLOCK ADVISORY WRITE z fe:00:1 0 EOF\n", nil, `pid "z" is not a number`},
		{"no inode", "1: FLOCK ADVISORY WRITE 5 fe:00 0 EOF\n", nil, `file "fe:00", want MAJOR:MINOR:INODE`},
		{"bad device", "1: FLOCK ADVISORY WRITE 5 zz:00:1 0 EOF\n", nil, `file "zz:00:1", want MAJOR:MINOR:INODE (hex, hex, decimal)`},
		{"bad lines left out, good ones kept", "x\n" +
			"1: FLOCK  ADVISORY  WRITE 15133 fe:00:10011890 0 EOF\n" +
			"1: FLOCK\n", []Lock{flock}, `line 1 "x": want "ID: KIND ..." (and 1 more lines out of format)`},
	} {
		got, err := ParseLocks([]byte(c.locks))
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: ParseLocks = %+v, want %+v", c.name, got, c.want)
		}
		switch {
		case c.wantErr == "" && err != nil:
			t.Errorf("%s: error %v, want none", c.name, err)
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("%s: error %v, want one containing %s", c.name, err, c.wantErr)
		}
	}
}

// TestLocksWithReadsAgain: a read that does not show what is looked for
// (its line missed between two pages) is made again, up to locksReads
// times, and the read that shows it is returned; a system without
// /proc/locks is read once.
func TestLocksWithReadsAgain(t *testing.T) {
	held := []Lock{{Kind: Flock, Mode: LockWrite, PID: 15133, Inode: 7}}
	other := []Lock{{Kind: Flock, Mode: LockWrite, PID: 9, Inode: 8}}
	shown := func(locks []Lock) bool { return len(locks) == 1 && locks[0].PID == 15133 }
	reads := func(pages ...[]Lock) (func() ([]Lock, error), *int) {
		n := 0
		return func() ([]Lock, error) {
			n++
			if n <= len(pages) {
				return pages[n-1], nil
			}
			return held, nil
		}, &n
	}
	read, n := reads(other, other)
	if got, _ := locksWith(read, shown); !shown(got) || *n != 3 {
		t.Errorf("missed twice, then shown: %+v after %d reads, want the holder's after 3", got, *n)
	}
	read, n = reads(other, other, other, other)
	if got, _ := locksWith(read, shown); shown(got) || *n != locksReads {
		t.Errorf("never shown: %+v after %d reads, want none after %d", got, *n, locksReads)
	}
	read, n = reads()
	if got, _ := locksWith(read, shown); !shown(got) || *n != 1 {
		t.Errorf("shown at once: %+v after %d reads, want the holder's after 1", got, *n)
	}
	n0 := 0
	unsupported := func() ([]Lock, error) { n0++; return nil, errors.ErrUnsupported }
	if _, err := locksWith(unsupported, shown); !errors.Is(err, errors.ErrUnsupported) || n0 != 1 {
		t.Errorf("no /proc/locks: %v after %d reads, want ErrUnsupported after 1", err, n0)
	}
}
