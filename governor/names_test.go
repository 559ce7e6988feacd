package governor_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/naming"
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

// Names that look alike are not two slots: a name not in NFC is refused
// naming its NFC form, and letters mixed from Latin, Greek and Cyrillic
// are refused; other scripts mix with Latin freely.
func TestLookAlikeNames(t *testing.T) {
	for _, tt := range []struct {
		name, reason, want string
	}{
		{"caf\u00e9", "", ""},                                  // NFC é
		{"cafe\u0301", naming.NotNFC, "caf\u00e9"},             // e + combining acute
		{"h\u0435avy", naming.MixedScript, ""},                 // Cyrillic е inside Latin
		{"\u03b1lpha", naming.MixedScript, ""},                 // Greek α
		{"\u0442\u044f\u0436\u0451\u043b\u044b\u0439", "", ""}, // Cyrillic alone
		{"\u8a55\u4fa1:eval", "", ""},                          // Han and Latin
		{"provider:anthropic", "", ""},
	} {
		err := governor.ValidateResource(tt.name)
		var ne *naming.Error
		switch {
		case tt.reason == "" && err != nil:
			t.Errorf("%+q: %v, want accepted", tt.name, err)
		case tt.reason != "" && (!errors.As(err, &ne) || ne.Reason != tt.reason || ne.Want != tt.want || !errors.Is(err, governor.ErrInvalid)):
			t.Errorf("%+q: %v, want a naming.Error %q (want %+q)", tt.name, err, tt.reason, tt.want)
		}
	}
}
