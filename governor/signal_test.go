package governor_test

import (
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
)

// date is the Date header of the responses below: times in headers are
// read against it, not against this machine's clock.
const date = "Tue, 01 Dec 2026 00:00:00 GMT"

func resp(status int, kv ...string) *http.Response {
	h := http.Header{}
	for i := 0; i < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return &http.Response{StatusCode: status, Header: h}
}

// TestSignalFromHTTP reads header shapes as the providers send them.
func TestSignalFromHTTP(t *testing.T) {
	tests := []struct {
		name string
		resp *http.Response
		want governor.Signal
	}{
		{"nil", nil, governor.Signal{}},
		{"plain 200", resp(200), governor.Signal{Status: 200}},
		{"429 without headers", resp(429), governor.Signal{Limited: true, Status: 429}},
		{"529 overloaded", resp(529, "Date", date, "x-should-retry", "true"),
			governor.Signal{Limited: true, Status: 529, ShouldRetry: "true"}},
		{"retry-after seconds", resp(429, "Retry-After", "20"),
			governor.Signal{Limited: true, Status: 429, RetryAfter: 20 * time.Second}},
		{"retry-after fraction", resp(429, "retry-after", "1.5"),
			governor.Signal{Limited: true, Status: 429, RetryAfter: 1500 * time.Millisecond}},
		{"retry-after 0 is the shortest cool-off", resp(429, "retry-after", "0"),
			governor.Signal{Limited: true, Status: 429, RetryAfter: time.Millisecond}},
		{"retry-after HTTP date, against Date", resp(429, "Date", date, "Retry-After", "Tue, 01 Dec 2026 00:01:30 GMT"),
			governor.Signal{Limited: true, Status: 429, RetryAfter: 90 * time.Second}},
		{"retry-after-ms wins over retry-after", resp(429, "retry-after-ms", "250", "retry-after", "1"),
			governor.Signal{Limited: true, Status: 429, RetryAfter: 250 * time.Millisecond}},
		{"x-should-retry false", resp(429, "x-should-retry", "false", "retry-after", "3"),
			governor.Signal{Limited: true, Status: 429, ShouldRetry: "false", RetryAfter: 3 * time.Second}},
		{"OpenAI 200 with budgets", resp(200,
			"x-ratelimit-limit-requests", "60",
			"x-ratelimit-limit-tokens", "150000",
			"x-ratelimit-remaining-requests", "59",
			"x-ratelimit-remaining-tokens", "149984",
			"x-ratelimit-reset-requests", "1s",
			"x-ratelimit-reset-tokens", "6m0s"),
			governor.Signal{Status: 200,
				Requests: governor.Budget{Known: true, Remaining: 59, Reset: time.Second},
				Tokens:   governor.Budget{Known: true, Remaining: 149984, Reset: 6 * time.Minute}}},
		{"OpenAI 429: retry after the exhausted budget's reset", resp(429,
			"x-ratelimit-remaining-requests", "0",
			"x-ratelimit-remaining-tokens", "9000",
			"x-ratelimit-reset-requests", "20ms",
			"x-ratelimit-reset-tokens", "1m30.5s"),
			governor.Signal{Limited: true, Status: 429, RetryAfter: 20 * time.Millisecond,
				Requests: governor.Budget{Known: true, Remaining: 0, Reset: 20 * time.Millisecond},
				Tokens:   governor.Budget{Known: true, Remaining: 9000, Reset: 90500 * time.Millisecond}}},
		{"Anthropic 429", resp(429,
			"Date", date,
			"retry-after", "7",
			"anthropic-ratelimit-requests-limit", "50",
			"anthropic-ratelimit-requests-remaining", "0",
			"anthropic-ratelimit-requests-reset", "2026-12-01T00:00:07Z",
			"anthropic-ratelimit-tokens-remaining", "3000",
			"anthropic-ratelimit-tokens-reset", "2026-12-01T00:00:05Z",
			"anthropic-ratelimit-input-tokens-remaining", "2000",
			"anthropic-ratelimit-input-tokens-reset", "2026-12-01T00:00:04Z",
			"anthropic-ratelimit-output-tokens-remaining", "8000",
			"anthropic-ratelimit-output-tokens-reset", "2026-12-01T00:00:01Z"),
			governor.Signal{Limited: true, Status: 429, RetryAfter: 7 * time.Second,
				Requests: governor.Budget{Known: true, Remaining: 0, Reset: 7 * time.Second},
				Tokens:   governor.Budget{Known: true, Remaining: 2000, Reset: 4 * time.Second}}},
		{"Anthropic 200, fractional seconds and offset", resp(200,
			"Date", date,
			"anthropic-ratelimit-requests-remaining", "49",
			"anthropic-ratelimit-requests-reset", "2026-12-01T01:00:01.5+01:00"),
			governor.Signal{Status: 200, Requests: governor.Budget{Known: true, Remaining: 49, Reset: 1500 * time.Millisecond}}},
		{"a reset already passed is 0", resp(200, "Date", date,
			"anthropic-ratelimit-tokens-remaining", "10", "anthropic-ratelimit-tokens-reset", "2026-11-30T23:59:00Z"),
			governor.Signal{Status: 200, Tokens: governor.Budget{Known: true, Remaining: 10}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := governor.SignalFromHTTP(tc.resp)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestSignalBadHeaders: a value that does not read is left out and
// named with the reason; the rest of the signal still counts.
func TestSignalBadHeaders(t *testing.T) {
	tests := []struct {
		kv      []string
		ignored string // what Ignored must hold
		retry   time.Duration
	}{
		{[]string{"retry-after", "soon"}, `retry-after "soon": neither seconds nor an HTTP date`, 0},
		{[]string{"retry-after", "-5"}, `retry-after "-5": allowed: 0 to 24h0m0s`, 0},
		{[]string{"retry-after", "1e300"}, `retry-after "1e300": allowed: 0 to 24h0m0s`, 0},
		{[]string{"retry-after", "NaN"}, `retry-after "NaN": neither seconds nor an HTTP date`, 0},
		{[]string{"retry-after", "999999999"}, `retry-after "999999999": allowed: 0 to 24h0m0s`, 0},
		{[]string{"retry-after-ms", "x", "retry-after", "2"}, `retry-after-ms "x": not a number`, 2 * time.Second},
		{[]string{"retry-after-ms", "Inf"}, `retry-after-ms "Inf": not a number`, 0},
		{[]string{"x-should-retry", "maybe"}, `x-should-retry "maybe": allowed: "true" or "false"`, 0},
		{[]string{"x-ratelimit-remaining-requests", "-1"}, `x-ratelimit-remaining-requests "-1": allowed: a whole number, 0 or more`, 0},
		{[]string{"x-ratelimit-remaining-tokens", "1.5"}, `x-ratelimit-remaining-tokens "1.5": allowed: a whole number, 0 or more`, 0},
		{[]string{"x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "6 minutes"},
			`x-ratelimit-reset-requests "6 minutes": not a duration such as "6m0s", "1.5s" or "20ms"`, 0},
		{[]string{"x-ratelimit-reset-tokens", "-1s"}, `x-ratelimit-reset-tokens "-1s": allowed: 0 to 24h0m0s`, 0},
		{[]string{"x-ratelimit-reset-tokens", "9999999h"}, `x-ratelimit-reset-tokens "9999999h": not a duration`, 0},
		{[]string{"anthropic-ratelimit-tokens-reset", "tomorrow"}, `anthropic-ratelimit-tokens-reset "tomorrow": not an RFC 3339 time`, 0},
		{[]string{"anthropic-ratelimit-requests-reset", "2030-01-01T00:00:00Z"}, `anthropic-ratelimit-requests-reset "2030-01-01T00:00:00Z": allowed: 0 to 24h0m0s`, 0},
		{[]string{"Date", "yesterday"}, `date "yesterday": not an HTTP date`, 0},
		{[]string{"retry-after", strings.Repeat("x", 200)}, `…": neither seconds`, 0},
	}
	for _, tc := range tests {
		t.Run(tc.kv[0]+"="+tc.kv[1][:min(len(tc.kv[1]), 12)], func(t *testing.T) {
			kv := append([]string{"Date", date}, tc.kv...)
			if tc.kv[0] == "Date" {
				kv = tc.kv
			}
			s := governor.SignalFromHTTP(resp(429, kv...))
			if !s.Limited || s.RetryAfter != tc.retry {
				t.Errorf("got %+v; want limited, retry after %v", s, tc.retry)
			}
			if len(s.Ignored) != 1 || !strings.Contains(s.Ignored[0], tc.ignored) {
				t.Errorf("Ignored = %q; want one naming %q", s.Ignored, tc.ignored)
			}
		})
	}
}

// TestRateLimitedError: RateLimited is an error that errors.As finds
// through wrapping and that wraps the provider's error.
func TestRateLimitedError(t *testing.T) {
	cause := errors.New("status 429: too many requests")
	err := fmt.Errorf("call: %w", governor.RateLimited{RetryAfter: 2 * time.Second, Reason: "HTTP 429", Err: cause})
	var rl governor.RateLimited
	if !errors.As(err, &rl) || rl.RetryAfter != 2*time.Second {
		t.Fatalf("errors.As: %v, %+v", err, rl)
	}
	if !errors.Is(err, cause) {
		t.Error("RateLimited does not unwrap to its cause")
	}
	want := "call: governor: rate limited by the provider (HTTP 429); retry after 2s: status 429: too many requests"
	if err.Error() != want {
		t.Errorf("got %q\nwant %q", err.Error(), want)
	}
	if governor.SignalFromHTTP(resp(200)).Err() != nil {
		t.Error("a 200 is an error")
	}
	if !errors.As(governor.SignalFromHTTP(resp(429, "retry-after", "3")).Err(), &rl) || rl.RetryAfter != 3*time.Second {
		t.Errorf("429 Err: %+v", rl)
	}
}
