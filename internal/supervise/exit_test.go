package supervise_test

import (
	"testing"

	"github.com/governor-dev/governor/internal/supervise"
)

func TestExitCode(t *testing.T) {
	tests := []struct {
		e    supervise.Exit
		want int
	}{
		{supervise.Exit{Code: 0}, 0},
		{supervise.Exit{Code: 3}, 3},
		{supervise.Exit{Signal: 9}, 137},
		{supervise.Exit{Signal: 15}, 143},
	}
	for _, tt := range tests {
		if got := supervise.ExitCode(tt.e); got != tt.want {
			t.Errorf("ExitCode(%+v) = %d, want %d", tt.e, got, tt.want)
		}
	}
}
