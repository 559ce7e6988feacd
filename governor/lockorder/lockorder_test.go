package lockorder_test

import (
	"fmt"
	"strings"
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

// Validate names every bad entry: empty, twice, not a resource name.
func TestValidate(t *testing.T) {
	if err := lockorder.Validate([]string{"issue", "provider:x"}); err != nil {
		t.Fatalf("a good order: %v", err)
	}
	err := lockorder.Validate([]string{"a", "", "a", "b c"})
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok || len(joined.Unwrap()) != 3 {
		t.Fatalf("Validate = %v; want three entries refused", err)
	}
	var got []string
	for _, e := range joined.Unwrap() {
		le, ok := e.(*lockorder.Error)
		if !ok {
			t.Fatalf("%T %v; want a *lockorder.Error", e, e)
		}
		got = append(got, fmt.Sprintf("%d:%d:%v", le.Index, le.First, le.Err != nil))
	}
	if want := "1:-1:false 2:0:false 3:-1:true"; strings.Join(got, " ") != want {
		t.Errorf("entries %v; want %s", got, want)
	}
}
