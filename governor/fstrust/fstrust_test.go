package fstrust_test

import (
	"strings"
	"testing"

	"github.com/governor-dev/governor/governor/fstrust"
)

func TestDirProblem(t *testing.T) {
	const me = 1000
	for _, tc := range []struct {
		uid, mode uint32
		want      string // "" or a word the problem names
	}{
		{me, 0o755, ""},
		{0, 0o755, ""},
		{0, 0o1777, ""},  // /tmp
		{me, 0o1777, ""}, // your own sticky shared dir
		{me, 0o775, "writable by group or others (mode 0775)"},
		{me, 0o757, "mode 0757"},
		{0, 0o2770, "mode 2770"},
		{1001, 0o755, "owned by uid 1001"},
		{1001, 0o1777, "owned by uid 1001"},
	} {
		got := fstrust.DirProblem(tc.uid, tc.mode, me)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("DirProblem(uid %d, mode %04o) = %q; want %q", tc.uid, tc.mode, got, tc.want)
		}
	}
}

func TestFileProblem(t *testing.T) {
	const me = 1000
	for _, tc := range []struct {
		uid, mode uint32
		want      string
	}{
		{me, 0o600, ""},
		{me, 0o644, ""},
		{0, 0o644, ""},
		{me, 0o664, "writable by group or others (mode 0664)"},
		{0, 0o666, "mode 0666"},
		{me, 0o1666, "mode 1666"},
		{1001, 0o600, "owned by uid 1001"},
	} {
		got := fstrust.FileProblem(tc.uid, tc.mode, me)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("FileProblem(uid %d, mode %04o) = %q; want %q", tc.uid, tc.mode, got, tc.want)
		}
	}
}
