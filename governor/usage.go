package governor

import "encoding/json"

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

// Cost is what u costs at p, in micro-units, rounded up.
func (p Price) Cost(u Usage) int64 {
	tok := u.InputTokens*p.Input + u.CachedInputTokens*p.CachedInput + u.OutputTokens*p.Output
	return (tok+999_999)/1_000_000 + p.PerCall
}

// Estimate is the upper bound of a call's cost at p: every input token
// uncached, and the whole of maxTokens of output.
func (p Price) Estimate(inputTokens, maxTokens int64) int64 {
	return p.Cost(Usage{InputTokens: inputTokens, OutputTokens: maxTokens})
}
