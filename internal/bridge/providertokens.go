package bridge

import (
	"context"
	"slices"
	"strings"

	"github.com/governor-dev/governor/governor"
)

// provider is the provider a report on l is about: the one provider
// its acquire named, or the provider:NAME resource it holds (takeover).
func (l *lease) provider() (string, error) {
	l.mu.Lock()
	names := slices.Clone(l.providers)
	l.mu.Unlock()
	if len(names) == 0 {
		for _, gl := range l.held.Leases() {
			if p, ok := strings.CutPrefix(gl.Resource(), governor.ProviderResourcePrefix); ok {
				names = append(names, p)
			}
		}
	}
	switch len(names) {
	case 0:
		return "", badRequest("provider_report needs a provider, or a lease of one")
	case 1:
		return names[0], nil
	}
	return "", badRequest("provider_report: lease %s holds providers %s; give the provider the report is about", l.id, strings.Join(names, ", "))
}

// reservedTokens refuses a used_tokens report for a provider l reserved
// no tokens of.
func (l *lease) reservedTokens(name string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !slices.Contains(l.providers, name) {
		return badRequest("used_tokens: lease %s reserved no tokens of provider %s; allowed: a lease acquired with that provider", l.id, name)
	}
	return nil
}

// settleTokens settles the tokens l reserved on provider p (named
// name) at used, as Provider.Do does after a call, once: a later report
// changes nothing. On failure it is left unsettled (a report may retry).
func (l *lease) settleTokens(ctx context.Context, p *governor.Provider, name string, used int64) error {
	l.mu.Lock()
	done := slices.Contains(l.tokensSettled, name)
	if !done {
		l.tokensSettled = append(l.tokensSettled, name)
	}
	estimate := l.tokens
	l.mu.Unlock()
	if done {
		return nil
	}
	err := p.SettleTokens(ctx, estimate, used)
	if err != nil {
		l.mu.Lock()
		l.tokensSettled = slices.DeleteFunc(l.tokensSettled, func(n string) bool { return n == name })
		l.mu.Unlock()
	}
	return err
}
