package governor

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// MaxRetryAfter bounds a retry time read from a response or given to a
// cool-off: a longer one is refused as bad input, not waited for.
const MaxRetryAfter = 24 * time.Hour

// RateLimited is a rate-limit signal from a provider: the error the
// function given to Provider.Do returns to say so (the call failed
// because the provider refused it for its limits), and what
// Signal.Err makes of a 429 or 529 answer. Provider.Do turns it into a
// fleet-wide cool-off of the provider (see Governor.CoolOff) and
// returns it, so that errors.As finds it.
type RateLimited struct {
	// RetryAfter is how long the provider asked to wait; 0 when it did
	// not say, and then the cool-off is DefaultCoolOff with jitter.
	RetryAfter time.Duration
	// Reason says what signalled, for events and logs ("HTTP 429").
	Reason string
	// Err is the provider's error, if any (errors.Is/As reach it).
	Err error
}

func (e RateLimited) Error() string {
	var b strings.Builder
	b.WriteString("governor: rate limited by the provider")
	if e.Reason != "" {
		b.WriteString(" (" + e.Reason + ")")
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, "; retry after %v", e.RetryAfter)
	}
	if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
	}
	return b.String()
}

func (e RateLimited) Unwrap() error { return e.Err }

// Budget is one dimension (requests or tokens) of a provider's budget as
// a response reported it.
type Budget struct {
	// Known: the response reported the remaining budget.
	Known bool
	// Remaining is the budget left in the provider's window.
	Remaining int64
	// Reset is how long until the budget is whole again; 0 when the
	// response did not say.
	Reset time.Duration
}

// Signal is what a provider's response says about its rate limits.
type Signal struct {
	// Limited: the provider refused the call for its limits (HTTP 429,
	// or 529, Anthropic's "overloaded").
	Limited bool
	// Status is the HTTP status code.
	Status int
	// RetryAfter is how long the response asked to wait (retry-after-ms,
	// else retry-after, else, when Limited, the latest reset of an
	// exhausted budget); 0 when it did not say.
	RetryAfter time.Duration
	// ShouldRetry is x-should-retry: "true" or "false"; "" when absent.
	ShouldRetry string
	// Requests and Tokens are the budgets the response reported: OpenAI's
	// x-ratelimit-{remaining,reset}-{requests,tokens}, Anthropic's
	// anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-
	// {remaining,reset} (Tokens is the scarcest of Anthropic's three).
	Requests Budget
	Tokens   Budget
	// Ignored names each header value that did not read, and why; such a
	// value is left out of the signal, never guessed at.
	Ignored []string
}

// Err returns the signal as a RateLimited error when Limited, else nil.
func (s Signal) Err() error {
	if !s.Limited {
		return nil
	}
	return RateLimited{RetryAfter: s.RetryAfter, Reason: fmt.Sprintf("HTTP %d", s.Status)}
}

// SignalFromHTTP reads the rate-limit signal of a provider's response:
// status 429 and 529, retry-after (seconds or an HTTP date),
// retry-after-ms, x-should-retry, OpenAI's x-ratelimit-remaining-* and
// x-ratelimit-reset-* (Go-style durations such as "6m0s", "1.5s",
// "20ms"), and Anthropic's anthropic-ratelimit-*-remaining and -reset
// (RFC 3339 times). Times are taken relative to the response's Date
// header when it has one (the provider's clock), else to this machine's.
// A header value that does not read is listed in Ignored with the
// reason; it never makes the whole signal fail. A nil resp is no signal.
func SignalFromHTTP(resp *http.Response) Signal {
	if resp == nil {
		return Signal{}
	}
	r := headerReader{h: resp.Header, now: time.Now()}
	if d := resp.Header.Get("Date"); d != "" {
		if t, err := http.ParseTime(d); err == nil {
			r.now = t
		} else {
			r.ignore("date", d, "not an HTTP date")
		}
	}
	s := Signal{Status: resp.StatusCode, Limited: resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == 529}
	switch v := strings.ToLower(strings.TrimSpace(resp.Header.Get("X-Should-Retry"))); v {
	case "", "true", "false":
		s.ShouldRetry = v
	default:
		r.ignore("x-should-retry", v, `allowed: "true" or "false"`)
	}
	s.Requests = r.openAI("requests")
	s.Tokens = r.openAI("tokens")
	if b := r.anthropic("requests"); b.Known {
		s.Requests = b
	}
	for _, kind := range []string{"tokens", "input-tokens", "output-tokens"} {
		if b := r.anthropic(kind); b.Known && (!s.Tokens.Known || scarcer(b, s.Tokens)) {
			s.Tokens = b
		}
	}
	// "Retry now" (0, a date passed) still cools off for the shortest
	// time: a RetryAfter of 0 means "not said".
	switch ms, sec := r.retryAfterMS(), r.retryAfter(); {
	case ms >= 0:
		s.RetryAfter = max(ms, time.Millisecond)
	case sec >= 0:
		s.RetryAfter = max(sec, time.Millisecond)
	case s.Limited:
		for _, b := range []Budget{s.Requests, s.Tokens} {
			if b.Known && b.Remaining == 0 {
				s.RetryAfter = max(s.RetryAfter, b.Reset)
			}
		}
	}
	s.Ignored = r.ignored
	return s
}

// scarcer tells whether budget a leaves less than b (the later reset on
// a tie).
func scarcer(a, b Budget) bool {
	if a.Remaining != b.Remaining {
		return a.Remaining < b.Remaining
	}
	return a.Reset > b.Reset
}

// headerReader reads the headers of one response, noting what it
// ignores.
type headerReader struct {
	h       http.Header
	now     time.Time
	ignored []string
}

func (r *headerReader) ignore(name, value, why string) {
	if len(value) > 64 {
		value = value[:64] + "…"
	}
	r.ignored = append(r.ignored, fmt.Sprintf("%s %q: %s", name, value, why))
}

// duration checks d, read from header name, against 0..MaxRetryAfter.
func (r *headerReader) duration(name, v string, d time.Duration) time.Duration {
	if d < 0 || d > MaxRetryAfter {
		r.ignore(name, v, fmt.Sprintf("allowed: 0 to %v", MaxRetryAfter))
		return -1
	}
	return d
}

// number reads header name, a number (a fraction allowed) of unit; -1
// when absent or bad.
func (r *headerReader) number(name string, unit time.Duration) time.Duration {
	v := strings.TrimSpace(r.h.Get(name))
	if v == "" {
		return -1
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		r.ignore(strings.ToLower(name), v, "not a number")
		return -1
	}
	if f < 0 || f*float64(unit) > float64(MaxRetryAfter) {
		r.ignore(strings.ToLower(name), v, fmt.Sprintf("allowed: 0 to %v", MaxRetryAfter))
		return -1
	}
	return time.Duration(f * float64(unit))
}

func (r *headerReader) retryAfterMS() time.Duration {
	return r.number("Retry-After-Ms", time.Millisecond)
}

// retryAfter reads retry-after: seconds, or an HTTP date.
func (r *headerReader) retryAfter() time.Duration {
	v := strings.TrimSpace(r.h.Get("Retry-After"))
	if v == "" {
		return -1
	}
	if v[0] >= '0' && v[0] <= '9' || v[0] == '-' || v[0] == '.' {
		return r.number("Retry-After", time.Second)
	}
	t, err := http.ParseTime(v)
	if err != nil {
		r.ignore("retry-after", v, "neither seconds nor an HTTP date")
		return -1
	}
	return r.duration("retry-after", v, max(t.Sub(r.now), 0))
}

// count reads a remaining budget: a whole number, 0 or more.
func (r *headerReader) count(name string) (int64, bool) {
	v := strings.TrimSpace(r.h.Get(name))
	if v == "" {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		r.ignore(name, v, "allowed: a whole number, 0 or more")
		return 0, false
	}
	return n, true
}

// openAI reads x-ratelimit-remaining-KIND and x-ratelimit-reset-KIND (a
// Go-style duration).
func (r *headerReader) openAI(kind string) Budget {
	var b Budget
	b.Remaining, b.Known = r.count("x-ratelimit-remaining-" + kind)
	name := "x-ratelimit-reset-" + kind
	if v := strings.TrimSpace(r.h.Get(name)); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			r.ignore(name, v, `not a duration such as "6m0s", "1.5s" or "20ms"`)
		} else if d = r.duration(name, v, d); d >= 0 {
			b.Reset = d
		}
	}
	return b
}

// anthropic reads anthropic-ratelimit-KIND-remaining and -reset (an RFC
// 3339 time).
func (r *headerReader) anthropic(kind string) Budget {
	var b Budget
	b.Remaining, b.Known = r.count("anthropic-ratelimit-" + kind + "-remaining")
	name := "anthropic-ratelimit-" + kind + "-reset"
	if v := strings.TrimSpace(r.h.Get(name)); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			r.ignore(name, v, "not an RFC 3339 time such as 2026-12-01T00:00:30Z")
		} else if d := r.duration(name, v, max(t.Sub(r.now), 0)); d >= 0 {
			b.Reset = d
		}
	}
	return b
}
