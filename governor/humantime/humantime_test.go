package humantime_test

import (
	"testing"
	"time"

	"github.com/governor-dev/governor/governor/humantime"
)

func TestAgo(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{-time.Second, "0ms"},
		{850 * time.Millisecond, "850ms"},
		{12*time.Second + 900*time.Millisecond, "12s"},
		{3*time.Minute + 4*time.Second, "3m04s"},
		{2*time.Hour + 5*time.Minute + 59*time.Second, "2h05m"},
	} {
		if got := humantime.Ago(tc.d); got != tc.want {
			t.Errorf("Ago(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

func TestCoolOffNote(t *testing.T) {
	end := time.Date(2026, 12, 6, 8, 0, 0, 400_000_000, time.FixedZone("x", 3600))
	want := "cooling off after a rate-limit signal until 2026-12-06T07:00:00Z (1m05s from now)"
	if got := humantime.CoolOffNote(end, 64*time.Second+600*time.Millisecond); got != want {
		t.Errorf("CoolOffNote = %q, want %q", got, want)
	}
}
