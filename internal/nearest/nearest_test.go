package nearest

import (
	"slices"
	"testing"
)

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"a", "", 1}, {"project", "project", 0}, {"porject", "project", 1},
		{"bakend", "backend", 1}, {"heavy", "haevy", 1}, {"kitten", "sitting", 3},
	} {
		if got := Distance(c.a, c.b); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

func TestNames(t *testing.T) {
	names := []string{"heavy", "heavy2", "provider:anthropic", "run"}
	for _, c := range []struct {
		word string
		want []string
	}{
		{"haevy", []string{"heavy"}},
		{"heavy1", []string{"heavy", "heavy2"}},
		{"provider:antropic", []string{"provider:anthropic"}},
		{"nosuch", nil},
		{"rn", []string{"run"}},
	} {
		if got := Names(c.word, names); !slices.Equal(got, c.want) {
			t.Errorf("Names(%q) = %q, want %q", c.word, got, c.want)
		}
	}
}
