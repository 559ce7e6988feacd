package governor

import (
	"encoding/json"
	"math/bits"
)

// Usage is what a provider's response says a call used.
type Usage struct {
	// InputTokens excludes CachedInputTokens.
	InputTokens       int64
	CachedInputTokens int64
	OutputTokens      int64
}

// UsageFromJSON reads the usage of a response body in the shapes of
// Anthropic's Messages API (usage.input_tokens, output_tokens,
// cache_read_input_tokens, cache_creation_input_tokens) and OpenAI's
// Chat Completions (usage.prompt_tokens, completion_tokens,
// prompt_tokens_details.cached_tokens) and Responses
// (usage.input_tokens, output_tokens, input_tokens_details.cached_tokens)
// APIs. ok is false when body has no usage it can read; the caller then
// settles at its estimate (or a cost it knows), never at zero.
func UsageFromJSON(body []byte) (u Usage, ok bool) {
	var r struct {
		Usage *struct {
			InputTokens         *int64 `json:"input_tokens"`
			OutputTokens        *int64 `json:"output_tokens"`
			CacheRead           int64  `json:"cache_read_input_tokens"`
			CacheCreation       int64  `json:"cache_creation_input_tokens"`
			PromptTokens        *int64 `json:"prompt_tokens"`
			CompletionTokens    *int64 `json:"completion_tokens"`
			PromptTokensDetails struct {
				CachedTokens int64 `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
			InputTokensDetails struct {
				CachedTokens int64 `json:"cached_tokens"`
			} `json:"input_tokens_details"`
		} `json:"usage"`
	}
	if json.Unmarshal(body, &r) != nil || r.Usage == nil {
		return Usage{}, false
	}
	x := r.Usage
	if x.CacheCreation < 0 || x.CacheRead < 0 {
		return Usage{}, false
	}
	switch {
	case x.PromptTokens != nil && x.CompletionTokens != nil: // OpenAI chat: prompt includes cached
		c := x.PromptTokensDetails.CachedTokens
		u = Usage{InputTokens: *x.PromptTokens - c, CachedInputTokens: c, OutputTokens: *x.CompletionTokens}
	case x.InputTokens != nil && x.OutputTokens != nil:
		if c := x.InputTokensDetails.CachedTokens; c > 0 { // OpenAI responses: input includes cached
			u = Usage{InputTokens: *x.InputTokens - c, CachedInputTokens: c, OutputTokens: *x.OutputTokens}
		} else { // Anthropic: input excludes the cache; a cache write is billed as input here
			u = Usage{InputTokens: *x.InputTokens + x.CacheCreation, CachedInputTokens: x.CacheRead, OutputTokens: *x.OutputTokens}
		}
	default:
		return Usage{}, false
	}
	if u.InputTokens < 0 || u.CachedInputTokens < 0 || u.OutputTokens < 0 {
		return Usage{}, false
	}
	return u, true
}

// Price is a provider's or model's price: micro-units per million
// tokens of each kind, and per call.
type Price struct {
	Input       int64
	Output      int64
	CachedInput int64
	PerCall     int64
}

// Cost is what u costs at p, in micro-units, rounded up, computed with
// checked arithmetic: a negative count or price, or a cost above
// MaxBudgetAmount (however large the counts), is an ErrInvalid naming
// the counts, never a wrapped amount.
func (p Price) Cost(u Usage) (int64, error) {
	terms := [3][2]int64{{u.InputTokens, p.Input}, {u.CachedInputTokens, p.CachedInput}, {u.OutputTokens, p.Output}}
	var tok uint64
	ok := p.PerCall >= 0 && p.PerCall <= MaxBudgetAmount
	for _, t := range terms {
		if t[0] < 0 || t[1] < 0 {
			ok = false
			break
		}
		hi, lo := bits.Mul64(uint64(t[0]), uint64(t[1]))
		var carry uint64
		tok, carry = bits.Add64(tok, lo, 0)
		if hi != 0 || carry != 0 {
			ok = false
			break
		}
	}
	// tok < 2^64 micro-units per million: its quotient, below 2^45, and
	// PerCall add up without overflow.
	c := int64(tok/1_000_000) + p.PerCall
	if tok%1_000_000 != 0 {
		c++ // rounded up
	}
	if ok && c <= MaxBudgetAmount {
		return c, nil
	}
	return 0, invalid("the cost of %d input, %d cached input and %d output tokens at %d, %d and %d micro-units per million and %d per call; allowed: counts and prices of 0 or more costing at most %d micro-units",
		u.InputTokens, u.CachedInputTokens, u.OutputTokens, p.Input, p.CachedInput, p.Output, p.PerCall, int64(MaxBudgetAmount))
}

// Estimate is the upper bound of a call's cost at p: every input token
// uncached, and the whole of maxTokens of output (Cost's errors).
func (p Price) Estimate(inputTokens, maxTokens int64) (int64, error) {
	return p.Cost(Usage{InputTokens: inputTokens, OutputTokens: maxTokens})
}
