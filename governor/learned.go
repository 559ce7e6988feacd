package governor

import (
	"context"
	"fmt"
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

// BudgetBackend is the part of the contract for budgets learned from a
// provider's responses.
type BudgetBackend interface {
	// RateLearn records b for key's rate limit: until each reported
	// reset (now + Reset, backend time), a reservation of key passes
	// only if the reported remaining of that dimension still covers its
	// cost (besides its configured limits: the stricter decides), and
	// takes its cost off it; a denial says to retry at the reset. A
	// later report replaces an earlier one. A dimension not reported
	// (Remaining < 0 or Reset 0) is left as it is. The Governor checks
	// b.
	RateLearn(ctx context.Context, key Key, b LearnedBudget) error
}

// Learn records the budget a provider's response reported (see
// SignalFromHTTP): until its resets, the provider's rate reservations in
// every process adopt the stricter of the configured limits and the
// reported remaining budget. A response that reported no budget with a
// reset changes nothing. Call it from the function given to Do, with the
// signal of each response. A backend without rate limits is ErrInvalid.
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
	bb, ok := p.g.b.(BudgetBackend)
	if !ok {
		return fmt.Errorf("%w: the backend %T keeps no learned budgets", ErrInvalid, p.g.b)
	}
	if b.ResetRequests > MaxRetryAfter || b.ResetTokens > MaxRetryAfter || b.ResetRequests < 0 || b.ResetTokens < 0 {
		return invalid("budget resets %v, %v; allowed: up to %v", b.ResetRequests, b.ResetTokens, MaxRetryAfter)
	}
	return bb.RateLearn(ctx, Key{p.g.project, p.resource}, b)
}
