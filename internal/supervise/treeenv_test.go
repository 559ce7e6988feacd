//go:build linux || darwin

package supervise

import (
	"slices"
	"testing"
)

func TestWithTreeID(t *testing.T) {
	tests := []struct {
		env  []string
		want []string
	}{
		{nil, []string{TreeEnv + "=b"}},
		{[]string{"A=1"}, []string{"A=1", TreeEnv + "=b"}},
		// An outer tree's id is kept, so that its supervisor still knows
		// these processes; the last duplicate wins, as in getenv.
		{[]string{TreeEnv + "=x", "A=1", TreeEnv + "=a"}, []string{"A=1", TreeEnv + "=a b"}},
	}
	for _, tt := range tests {
		if got := withTreeID(tt.env, "b"); !slices.Equal(got, tt.want) {
			t.Errorf("withTreeID(%q) = %q, want %q", tt.env, got, tt.want)
		}
	}
}
