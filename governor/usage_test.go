package governor_test

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/governor-dev/governor/governor"
)

func TestUsageFromJSON(t *testing.T) {
	for _, tt := range []struct {
		name, body string
		want       governor.Usage
		ok         bool
	}{
		{"anthropic", `{"usage":{"input_tokens":100,"output_tokens":50,"cache_read_input_tokens":400,"cache_creation_input_tokens":20}}`,
			governor.Usage{InputTokens: 120, CachedInputTokens: 400, OutputTokens: 50}, true},
		{"openai chat", `{"usage":{"prompt_tokens":1000,"completion_tokens":30,"prompt_tokens_details":{"cached_tokens":600}}}`,
			governor.Usage{InputTokens: 400, CachedInputTokens: 600, OutputTokens: 30}, true},
		{"openai responses", `{"usage":{"input_tokens":900,"output_tokens":10,"input_tokens_details":{"cached_tokens":100}}}`,
			governor.Usage{InputTokens: 800, CachedInputTokens: 100, OutputTokens: 10}, true},
		{"no usage", `{"id":"x"}`, governor.Usage{}, false},
		{"half a usage", `{"usage":{"input_tokens":3}}`, governor.Usage{}, false},
		{"not json", `<html>`, governor.Usage{}, false},
		{"cached above prompt", `{"usage":{"prompt_tokens":1,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":5}}}`, governor.Usage{}, false},
	} {
		got, ok := governor.UsageFromJSON([]byte(tt.body))
		if got != tt.want || ok != tt.ok {
			t.Errorf("%s: %+v %v; want %+v %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}

func TestPriceCost(t *testing.T) {
	// $3 / $15 / $0.30 per million tokens, in micro-units.
	p := governor.Price{Input: 3_000_000, Output: 15_000_000, CachedInput: 300_000}
	u := governor.Usage{InputTokens: 1000, CachedInputTokens: 10_000, OutputTokens: 500}
	// 1000*3 + 10000*0.3 + 500*15 = 3000+3000+7500 micro-units = $0.0135
	if got, _ := p.Cost(u); got != 13_500 {
		t.Fatalf("Cost = %d; want 13500", got)
	}
	if got, _ := p.Estimate(1000, 4096); got != 3000+61_440 {
		t.Fatalf("Estimate = %d; want %d", got, 3000+61_440)
	}
	if got, _ := (governor.Price{PerCall: 7, Input: 1}).Cost(governor.Usage{InputTokens: 1}); got != 8 {
		t.Fatalf("a token's fraction and a per-call price: %d; want 8 (rounded up)", got)
	}
}

// TestPriceCostOverflow: counts whose cost passes int64 (or
// MaxBudgetAmount) are bad input naming them, never a wrapped amount: a
// max_tokens of 1229782938247303441 at $15 per million wrapped to an
// estimate of 0, and a usage of 2^62 tokens settled a reservation at 0.
func TestPriceCostOverflow(t *testing.T) {
	p := governor.Price{Input: 3_000_000, Output: 15_000_000, CachedInput: 300_000, PerCall: 1}
	for _, u := range []governor.Usage{
		{OutputTokens: 1229782938247303441},
		{InputTokens: 1 << 62},
		{CachedInputTokens: 1 << 62},
		{InputTokens: 1 << 62, OutputTokens: 1 << 62},
		{InputTokens: -1},
	} {
		got, err := p.Cost(u)
		if !errors.Is(err, governor.ErrInvalid) || got != 0 {
			t.Errorf("Cost(%+v) = %d, %v; want an ErrInvalid", u, got, err)
			continue
		}
		for _, n := range []int64{u.InputTokens, u.CachedInputTokens, u.OutputTokens} {
			if !strings.Contains(err.Error(), strconv.FormatInt(n, 10)) {
				t.Errorf("Cost(%+v): %v; want it to name %d", u, err, n)
			}
		}
	}
	if _, err := (governor.Price{PerCall: 1 << 62}).Cost(governor.Usage{}); !errors.Is(err, governor.ErrInvalid) {
		t.Errorf("a per-call price of 2^62: %v; want an ErrInvalid", err)
	}
	if _, err := (governor.Price{Output: 1 << 62}).Estimate(0, 4); !errors.Is(err, governor.ErrInvalid) {
		t.Errorf("a price of 2^62 per million for 4 tokens: %v; want an ErrInvalid", err)
	}
	if got, err := (governor.Price{Output: 15_000_000}).Estimate(0, 1_000_000_000_000); err != nil || got != 15_000_000_000_000 {
		t.Errorf("a trillion tokens at $15 per million: %d, %v; want 15000000000000", got, err)
	}
}

// TestUsageShapesShared reads the cases the Python and TypeScript
// clients' usage and price helpers are tested on: the three agree.
func TestUsageShapesShared(t *testing.T) {
	raw, err := os.ReadFile("testdata/usage-shapes.json")
	if err != nil {
		t.Fatal(err)
	}
	type usage struct {
		Input  int64 `json:"input_tokens"`
		Cached int64 `json:"cached_input_tokens"`
		Output int64 `json:"output_tokens"`
	}
	var f struct {
		Usage []struct {
			Name, Body string
			Usage      *usage
		}
		Prices []struct {
			Price map[string]float64
			Usage usage
			Cost  float64
		}
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	for _, c := range f.Usage {
		got, ok := governor.UsageFromJSON([]byte(c.Body))
		if ok != (c.Usage != nil) || ok && got != (governor.Usage{InputTokens: c.Usage.Input, CachedInputTokens: c.Usage.Cached, OutputTokens: c.Usage.Output}) {
			t.Errorf("%s: %+v %v; want %+v", c.Name, got, ok, c.Usage)
		}
	}
	micro := func(v float64) int64 { return int64(math.Round(v * governor.MicroUnit)) }
	for _, c := range f.Prices {
		p := governor.Price{Input: micro(c.Price["input"]), Output: micro(c.Price["output"]),
			CachedInput: micro(c.Price["cached_input"]), PerCall: micro(c.Price["per_call"])}
		u := governor.Usage{InputTokens: c.Usage.Input, CachedInputTokens: c.Usage.Cached, OutputTokens: c.Usage.Output}
		if got, err := p.Cost(u); got != micro(c.Cost) || err != nil {
			t.Errorf("%v of %+v: %d micro-units, %v; want %d", c.Price, c.Usage, got, err, micro(c.Cost))
		}
	}
}
