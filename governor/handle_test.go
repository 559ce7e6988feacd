package governor_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/governor-dev/governor/governor"
)

func TestParseHandle(t *testing.T) {
	const secret = "0123456789abcdef0123456789abcdef"
	id := governor.LeaseIDOf(secret)
	legacy := "0123456789abcdef0123456789abcdef" // 32 hex: a lease from before secrets
	for _, tc := range []struct {
		in   string
		want governor.Handle
		err  string // in the error, beside the value and the allowed form
	}{
		{in: "heavy@" + id + "." + secret, want: governor.Handle{Resource: "heavy", ID: id, Secret: secret}},
		{in: "mail@example.com@" + id + "." + secret, want: governor.Handle{Resource: "mail@example.com", ID: id, Secret: secret}},
		{in: "v1.2@" + id + "." + secret, want: governor.Handle{Resource: "v1.2", ID: id, Secret: secret}},
		{in: "heavy@" + id, want: governor.Handle{Resource: "heavy", ID: id}}, // names, proves nothing
		{in: "heavy@" + legacy, want: governor.Handle{Resource: "heavy", ID: legacy}},
		{in: "heavy", err: "no '@'"},
		{in: "", err: "no '@'"},
		{in: "@" + id, err: "no resource before '@'"},
		{in: "heavy@", err: "no lease id after '@'"},
		{in: "heavy@." + secret, err: "no lease id after '@'"},
		{in: "heavy@" + id + ".", err: "no secret after '.'"},
		{in: "heavy@XYZ", err: "the lease id is not hex digits"},
		{in: "heavy@" + strings.ToUpper(id), err: "the lease id is not hex digits"},
		{in: "heavy@" + id + ".abc", err: "the secret is not 32 hex digits"},
		{in: "heavy@" + id + "." + secret + "." + secret, err: "the secret is not 32 hex digits"},
		{in: "heavy@" + id + "." + strings.Repeat("0", 32), err: "the secret does not belong to the lease id"},
		{in: "bad name@" + id + "." + secret, err: "contains ' '"},
	} {
		h, err := governor.ParseHandle(tc.in)
		if tc.err == "" {
			if err != nil || h != tc.want {
				t.Errorf("ParseHandle(%q) = %+v, %v; want %+v", tc.in, h, err, tc.want)
			}
			if err == nil && h.String() != tc.in {
				t.Errorf("ParseHandle(%q).String() = %q", tc.in, h.String())
			}
			continue
		}
		if err == nil || !errors.Is(err, governor.ErrInvalid) || !strings.Contains(err.Error(), tc.err) ||
			!strings.Contains(err.Error(), "\""+tc.in+"\"") || (!strings.Contains(tc.err, "contains") && !strings.Contains(err.Error(), governor.HandleForm)) {
			t.Errorf("ParseHandle(%q): %v; want ErrInvalid naming the value, %q and the form %s", tc.in, err, tc.err, governor.HandleForm)
		}
	}
}

func TestOwnerProven(t *testing.T) {
	const secret = "0123456789abcdef0123456789abcdef"
	id := governor.LeaseIDOf(secret)
	for _, tc := range []struct {
		id, secret string
		want       bool
	}{
		{id, secret, true},
		{id, "", false},
		{id, strings.Repeat("f", 32), false},
		{id, id, false},
		{"0123456789abcdef0123456789abcdef", "", true}, // a lease from before secrets
		{"a", "", true},
	} {
		if got := governor.OwnerProven(tc.id, tc.secret); got != tc.want {
			t.Errorf("OwnerProven(%q, %q) = %v, want %v", tc.id, tc.secret, got, tc.want)
		}
	}
}
