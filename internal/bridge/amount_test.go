package bridge_test

import (
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"testing"
)

// n is a JSON number written as the literal s.
func n(s string) json.Number { return json.Number(s) }

// reserved is what an acquire's result says budget evals-day reserved,
// as the JSON text a client reads (the shortest float text).
func reserved(c *client, res string, estimate any) string {
	c.t.Helper()
	got := c.call("acquire", map[string]any{"resources": []string{res}, "limit": 1, "budgets": []any{day(1e9)}, "estimate": estimate})
	c.call("settle", map[string]any{"lease": got["lease"], "cost": 0})
	c.call("release", map[string]any{"lease": got["lease"]})
	return strconv.FormatFloat(got["budgets"].([]any)[0].(map[string]any)["reserved"].(float64), 'f', -1, 64)
}

// TestAmountsCrossExactly: an amount sent as a number or a decimal
// string is the amount reserved, and the amounts returned are the
// decimals kept (micro-units): 0.1 and 0.2 settled make 0.3, not the
// float sum 0.30000000000000004; a float's noise is no amount
// (0.1+0.2 reserves 0.3); 2e3 is 2000.
func TestAmountsCrossExactly(t *testing.T) {
	a := start(t, fileStore(t))
	a.hello()
	for i, v := range []string{"0.1", "0.7", "0.000001", "123456.654321", "999999999.999999"} {
		for _, sent := range []any{n(v), v} {
			if got := reserved(a, "r"+strconv.Itoa(i), sent); got != v {
				t.Errorf("estimate %#v reserved %s", sent, got)
			}
		}
	}
	for sent, want := range map[json.Number]string{"0.30000000000000004": "0.3", "2e3": "2000", "2000.0": "2000", "1.5E-5": "0.000015"} {
		if got := reserved(a, "noise", sent); got != want {
			t.Errorf("estimate %s reserved %s; want %s", sent, got, want)
		}
	}
	b := start(t, fileStore(t))
	b.hello()
	for _, cost := range []any{n("0.1"), "0.2"} {
		l := b.call("acquire", map[string]any{"resources": []string{"s"}, "limit": 1, "budgets": []any{day(1)}, "estimate": 0.5})
		b.call("settle", map[string]any{"lease": l["lease"], "cost": cost})
		b.call("release", map[string]any{"lease": l["lease"]})
	}
	if s, _ := spent(b); s != 0.3 {
		t.Fatalf("settled 0.1 then 0.2: spent %v; want 0.3", s)
	}
}

// TestAmountsFinerThanAMicroUnitAreRefused: an amount the budget would
// keep rounded (finer than a millionth of its unit), a negative one,
// one out of range or not a decimal is refused, naming the field and
// the value, and leaves nothing held; it never becomes 0 (an estimate
// of 1e-07 reserved nothing before) nor a neighbour (0.1234567 was
// 0.123457).
func TestAmountsFinerThanAMicroUnitAreRefused(t *testing.T) {
	a := start(t, fileStore(t))
	a.hello()
	for _, tc := range []struct {
		estimate any
		want     string
	}{
		{n("1e-07"), "estimate 1e-07 is finer than a millionth of the unit"},
		{n("0.1234567"), "estimate 0.1234567 is finer"},
		{n("0.0000015"), "estimate 0.0000015 is finer"},
		{"0.1234567", `estimate "0.1234567"; allowed: 0 to 1000000000 units with at most 6 decimals`},
		{"2e3", `estimate "2e3"`},
		{"-1", `estimate "-1"`},
		{"", `estimate ""`},
		{n("-1"), "estimate -1;"},
		{n("1000000001"), "estimate 1000000001;"},
		{n("1e400"), "estimate 1e400;"},
		{true, "args:"},
	} {
		e := a.fail("acquire", map[string]any{"resources": []string{"bad"}, "limit": 1, "budgets": []any{day(1)}, "estimate": tc.estimate})
		if e["kind"] != "failure" || !strings.Contains(e["message"].(string), tc.want) {
			t.Errorf("estimate %#v: %v; want a failure naming %q", tc.estimate, e, tc.want)
		}
	}
	e := a.fail("acquire", map[string]any{"resources": []string{"bad"}, "limit": 1, "estimate": 0.1,
		"budgets": []any{map[string]any{"name": "evals-day", "limit": n("0.0000001"), "unit": "USD", "per": "24h"}}})
	if !strings.Contains(e["message"].(string), "budget evals-day limit 0.0000001 is finer") {
		t.Errorf("a budget's limit finer than a micro-unit: %v", e)
	}
	l := a.call("acquire", map[string]any{"resources": []string{"bad"}, "limit": 1, "budgets": []any{day(1)}, "estimate": 0.5})
	for _, args := range []map[string]any{{"cost": n("4e-7")}, {"costs": map[string]any{"evals-day": "0.0000004"}}} {
		args["lease"] = l["lease"]
		if e := a.fail("settle", args); !strings.Contains(e["message"].(string), "budget evals-day cost") {
			t.Errorf("settle %v: %v; want a failure naming the cost", args, e)
		}
	}
	// The refused settles settled nothing: the estimate is still reserved.
	if s, r := spent(a); s != 0 || r != 0.5 {
		t.Fatalf("after refused settles: spent %v reserved %v; want 0, 0.5", s, r)
	}
}

// TestCountsCrossExactly: a token count is a whole number, sent as a
// JSON number in any notation (2e3) or as a decimal string (what a
// JavaScript client sends above 2^53), read exactly; a fraction or a
// count beyond int64 is refused naming the field and the value.
func TestCountsCrossExactly(t *testing.T) {
	inR, inW := io.Pipe()
	a := startWith(t, fileStore(t), catalogOf(t, "providers:\n  anthropic: {tokens_per_minute: 6000}\n"), inR, inW)
	a.hello()
	// 6000 tokens a minute: 2e3, "2000" and 2000.0 fit, 3000 more not
	// (100 come back a second).
	for _, tokens := range []any{n("2e3"), "2000", n("2000.0")} {
		a.call("provider_acquire", map[string]any{"provider": "anthropic", "tokens": tokens})
	}
	if e := a.fail("provider_acquire", map[string]any{"provider": "anthropic", "tokens": 3000, "if_busy": "fail"}); e["kind"] != "busy" {
		t.Fatalf("3000 tokens more than the minute's: %v", e)
	}
	// Above 2^53, exactly: the message names the count as sent, not a
	// float's neighbour (9007199254740992).
	e := a.fail("provider_acquire", map[string]any{"provider": "anthropic", "tokens": "9007199254740993"})
	if !strings.Contains(e["message"].(string), "9007199254740993") {
		t.Errorf("tokens above 2^53: %v", e)
	}
	for _, tc := range []struct {
		field string
		v     any
		want  string
	}{
		{"tokens", n("2.5"), "number 2.5 into Go struct field providerArgs.tokens"},
		{"max_tokens", n("1e19"), "number 1e19 into Go struct field providerArgs.max_tokens"},
		{"max_tokens", "12.0", `string "12.0" into Go struct field providerArgs.max_tokens`},
		{"tokens", true, "true into Go struct field providerArgs.tokens"},
	} {
		e := a.fail("provider_acquire", map[string]any{"provider": "anthropic", tc.field: tc.v})
		if e["kind"] != "failure" || !strings.Contains(e["message"].(string), tc.want) {
			t.Errorf("%s %#v: %v; want a failure naming %q", tc.field, tc.v, e, tc.want)
		}
	}
}
