package governor

import (
	"context"
	"time"
)

// LearnedBudget is what a provider's response reported of its budget:
// the requests and tokens it will still accept, each until its reset
// (Remaining -1 or Reset 0: that dimension was not reported).
type LearnedBudget struct {
	RemainingRequests int64
	ResetRequests     time.Duration
	RemainingTokens   int64
	ResetTokens       time.Duration
}

// Learn records the budget a provider's response reported (see
// SignalFromHTTP): until its resets, the provider's rate reservations in
// every process adopt the stricter of the configured limits and the
// reported remaining budget. A response that reported no budget with a
// reset changes nothing. Call it from the function given to Do, with the
// signal of each response.
func (p *Provider) Learn(ctx context.Context, s Signal) error {
	b := LearnedBudget{RemainingRequests: -1, RemainingTokens: -1}
	if s.Requests.Known && s.Requests.Reset > 0 {
		b.RemainingRequests, b.ResetRequests = s.Requests.Remaining, s.Requests.Reset
	}
	if s.Tokens.Known && s.Tokens.Reset > 0 {
		b.RemainingTokens, b.ResetTokens = s.Tokens.Remaining, s.Tokens.Reset
	}
	if b.RemainingRequests < 0 && b.RemainingTokens < 0 {
		return nil
	}
	if b.ResetRequests > MaxRetryAfter || b.ResetTokens > MaxRetryAfter || b.ResetRequests < 0 || b.ResetTokens < 0 {
		return invalid("budget resets %v, %v; allowed: up to %v", b.ResetRequests, b.ResetTokens, MaxRetryAfter)
	}
	return p.g.rates.RateAdjust(ctx, RateAdjustment{Key: Key{p.g.project, p.resource}, Learned: &b})
}
