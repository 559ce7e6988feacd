package lockorder_test

import (
	"testing"

	"github.com/governor-dev/governor/governor/lockorder"
)

// Compare: the first prefix matched first (the name, or it and a
// colon), then by name; a resource matching none comes last.
func TestCompare(t *testing.T) {
	order := []string{"db", "gpu"}
	for _, tc := range []struct {
		a, b string
		want int // its sign
	}{
		{"db", "gpu", -1},
		{"gpu:0", "db:main", 1},
		{"db:a", "db:b", -1},
		{"gpu", "aaa", -1}, // matched before unmatched
		{"dbx", "gpu", 1},  // a prefix without its colon does not match
		{"zzz", "aaa", 1},  // neither matches: by name
		{"db:a", "db:a", 0},
	} {
		got := lockorder.Compare(order, tc.a, tc.b)
		if sign(got) != tc.want {
			t.Errorf("Compare(%q, %q) = %d, want sign %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}
