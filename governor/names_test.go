package governor_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
)

func TestValidateResource(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
		msg  string
	}{
		{"provider:anthropic", true, ""},
		{"issue:2316", true, ""},
		{"ファイル/a.go", true, ""},
		{"", false, "empty resource name"},
		{strings.Repeat("x", 201), false, "at most 200 bytes"},
		{strings.Repeat("x", 1<<20), false, "name of 1048576 bytes"},
		{"a b", false, "white space"},
		{"a\nb", false, "white space"},
		{"a\x00b", false, "printable"},
		{"a{b}", false, "not allowed: { }"},
		{"a*", false, "not allowed"},
		{"\xff", false, "not valid UTF-8"},
	}
	for _, tt := range tests {
		err := governor.ValidateResource(tt.name)
		if tt.ok != (err == nil) || (err != nil && (!errors.Is(err, governor.ErrInvalid) || !strings.Contains(err.Error(), tt.msg))) {
			t.Errorf("ValidateResource(%.40q) = %v; want ok=%v containing %q", tt.name, err, tt.ok, tt.msg)
		}
	}
	for _, p := range []string{"", "a/b", "a:b", strings.Repeat("p", 65)} {
		if err := governor.ValidateProject(p); !errors.Is(err, governor.ErrInvalid) {
			t.Errorf("ValidateProject(%q) = %v, want ErrInvalid", p, err)
		}
	}
}

// Bad acquire options are refused before anything reaches the backend.
func TestAcquireBadInputLeavesNothing(t *testing.T) {
	g := newFileGovernor(t)
	b := g.Backend()
	ctx := context.Background()
	cases := []struct {
		res  string
		o    governor.AcquireOptions
		want error
	}{
		{"r", governor.AcquireOptions{Limit: 0}, governor.ErrInvalid},
		{"r", governor.AcquireOptions{Limit: -1}, governor.ErrInvalid},
		{"r", governor.AcquireOptions{Limit: governor.MaxLimit + 1}, governor.ErrInvalid},
		{"r", governor.AcquireOptions{Limit: 2, Weight: -1}, governor.ErrInvalid},
		{"r", governor.AcquireOptions{Limit: 2, Weight: 3}, governor.ErrTooHeavy},
		{"r", governor.AcquireOptions{Limit: 2, Weight: 1, Exclusive: true}, governor.ErrInvalid},
		{"r", governor.AcquireOptions{Limit: 2, TTL: time.Millisecond}, governor.ErrInvalid},
		{"r", governor.AcquireOptions{Limit: 2, Mode: 7}, governor.ErrInvalid},
		{"bad name", governor.AcquireOptions{Limit: 1}, governor.ErrInvalid},
	}
	for _, c := range cases {
		if _, err := g.Acquire(ctx, c.res, c.o); !errors.Is(err, c.want) {
			t.Errorf("Acquire(%q, %+v) = %v, want %v", c.res, c.o, err, c.want)
		}
	}
	if names, err := g.Resources(ctx); err != nil || len(names) != 0 {
		t.Fatalf("bad input left resources behind: %v, %v", names, err)
	}
	if _, err := governor.New(b, governor.Options{TTL: 10 * time.Second, Heartbeat: 10 * time.Second}); !errors.Is(err, governor.ErrInvalid) {
		t.Fatalf("heartbeat not shorter than TTL: %v", err)
	}
}
