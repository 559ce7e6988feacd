package config

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/governor-dev/governor/governor"
)

// Amount is an amount of a budget's unit, kept as micro-units
// (governor.MicroUnit); the file writes it in units: 40, 12.50.
type Amount int64

// String writes a in units, with up to six decimals.
func (a Amount) String() string { return governor.FormatBudgetAmount(int64(a)) }

// Budget configures one spend budget (docs/budgets.md): budgets.NAME.
type Budget struct {
	Limit Amount `mapstructure:"limit"`
	Unit  string `mapstructure:"unit"`
	// The window: Per (fixed windows aligned on the Unix epoch), or
	// Calendar "day" or "month" in the IANA time zone TZ (default UTC).
	Per      time.Duration `mapstructure:"per"`
	Calendar string        `mapstructure:"calendar"`
	TZ       string        `mapstructure:"tz"`
	Soft     Amount        `mapstructure:"soft"` // 0: none
	// The scope: a call is charged when every list that is set holds
	// the call's value (all empty: every call with a cost).
	Providers []string `mapstructure:"providers"`
	Models    []string `mapstructure:"models"`
	FairKeys  []string `mapstructure:"fair_keys"`
	Sessions  []string `mapstructure:"sessions"`
}

// Price configures prices.NAME, NAME a provider or PROVIDER/MODEL:
// amounts per million tokens of each kind, and per call.
type Price struct {
	Input       Amount `mapstructure:"input"`
	Output      Amount `mapstructure:"output"`
	CachedInput Amount `mapstructure:"cached_input"`
	PerCall     Amount `mapstructure:"per_call"`
}

// Price is p as governor prices a call.
func (p Price) Price() governor.Price {
	return governor.Price{Input: int64(p.Input), Output: int64(p.Output), CachedInput: int64(p.CachedInput), PerCall: int64(p.PerCall)}
}

// budgetKeys are the keys of budgets.NAME.
var budgetKeys = map[string]*schema{
	"limit":     leaf(kindAmount),
	"unit":      leaf(kindString),
	"per":       leaf(kindDuration),
	"calendar":  leaf(kindString),
	"tz":        leaf(kindString),
	"soft":      leaf(kindAmount),
	"providers": leaf(kindList),
	"models":    leaf(kindList),
	"fair_keys": leaf(kindList),
	"sessions":  leaf(kindList),
}

// priceKeys are the keys of prices.NAME.
var priceKeys = map[string]*schema{
	"input":        leaf(kindAmount),
	"output":       leaf(kindAmount),
	"cached_input": leaf(kindAmount),
	"per_call":     leaf(kindAmount),
}

// Window is b's window as governor keeps it; an error names the key and
// the value that do not read.
func (b Budget) Window() (governor.BudgetWindow, error) {
	w := governor.BudgetWindow{Per: b.Per, Calendar: b.Calendar}
	if b.TZ != "" {
		if b.Calendar == "" {
			return w, fmt.Errorf("tz %q without calendar; allowed: tz with calendar day or month (a per window is aligned on UTC)", b.TZ)
		}
		loc, err := time.LoadLocation(b.TZ)
		if err != nil || b.TZ == "Local" {
			return w, fmt.Errorf("tz %q is not an IANA time zone; allowed: a name such as UTC, Europe/Paris or America/New_York", b.TZ)
		}
		w.Location = loc
	}
	if err := w.Validate(); err != nil {
		return w, fmt.Errorf("%s", strings.TrimPrefix(err.Error(), governor.ErrInvalid.Error()+": "))
	}
	return w, nil
}

// SpendBudget is budget name as governor reserves on it.
func (c Config) SpendBudget(name string) (governor.SpendBudget, error) {
	if err := governor.ValidateBudgetName(name); err != nil {
		return governor.SpendBudget{}, err
	}
	b, ok := c.Budgets[name]
	if !ok {
		return governor.SpendBudget{}, fmt.Errorf("%w: budget %q is not configured; configured: %s",
			governor.ErrInvalid, name, orNone(sortedKeys(c.Budgets)))
	}
	w, err := b.Window()
	if err != nil {
		return governor.SpendBudget{}, fmt.Errorf("%w: budgets.%s: %v", governor.ErrInvalid, name, err)
	}
	return governor.SpendBudget{Name: name, Limit: int64(b.Limit), Soft: int64(b.Soft), Unit: b.Unit, Window: w}, nil
}

// SpendScope is what a call is known by, for the budgets that apply to
// it: its providers, model, fair key and session.
type SpendScope struct {
	Providers []string
	Model     string
	FairKey   string
	Session   string
}

// BudgetsFor returns the names of the budgets whose scope holds s,
// sorted: each list a budget sets must hold s's value (one of s's
// providers for providers).
func (c Config) BudgetsFor(s SpendScope) []string {
	var out []string
	for _, name := range sortedKeys(c.Budgets) {
		b := c.Budgets[name]
		if len(b.Providers) > 0 && !slices.ContainsFunc(s.Providers, func(p string) bool { return slices.Contains(b.Providers, p) }) {
			continue
		}
		if (len(b.Models) > 0 && !slices.Contains(b.Models, s.Model)) ||
			(len(b.FairKeys) > 0 && !slices.Contains(b.FairKeys, s.FairKey)) ||
			(len(b.Sessions) > 0 && !slices.Contains(b.Sessions, s.Session)) {
			continue
		}
		out = append(out, name)
	}
	return out
}

// PriceFor returns the price of model at provider: prices.PROVIDER/MODEL,
// else prices.PROVIDER; ok false when neither is configured.
func (c Config) PriceFor(provider, model string) (governor.Price, bool) {
	if model != "" {
		if p, ok := c.Prices[provider+"/"+model]; ok {
			return p.Price(), true
		}
	}
	p, ok := c.Prices[provider]
	return p.Price(), ok
}

// budgetProblems are the problems of budgets and prices.
func (c Config) budgetProblems() []*FieldError {
	o := c.origin
	var ps []*FieldError
	add := func(key, value, format string, args ...any) {
		ps = append(ps, o.errAt(key, value, fmt.Sprintf(format, args...)))
	}
	providers := orNone(sortedKeys(c.Providers))
	checkProvider := func(key, p string) {
		if _, ok := c.Providers[p]; !ok {
			add(key, p, "%q is not a configured provider; configured: %s (declare it under providers, even as 'NAME: {}')", p, providers)
		}
	}
	for _, name := range sortedKeys(c.Budgets) {
		b, prefix := c.Budgets[name], "budgets."+name+"."
		if err := governor.ValidateBudgetName(name); err != nil {
			add("budgets."+name, name, "%s", strings.TrimPrefix(err.Error(), governor.ErrInvalid.Error()+": "))
		}
		switch key := prefix + "limit"; {
		case o.isBroken(key):
		case o.missing(key):
			add(key, "", "missing; a budget needs a limit: an amount in its unit, e.g. 40 or 12.50")
		}
		switch key := prefix + "unit"; {
		case o.isBroken(key):
		case b.Unit == "":
			add(key, "", "missing; a budget needs a unit: a currency code such as USD or a cost unit such as tokens")
		default:
			if err := governor.ValidateBudgetUnit(b.Unit); err != nil {
				add(key, b.Unit, "%s", strings.TrimPrefix(err.Error(), governor.ErrInvalid.Error()+": "))
			}
		}
		if !o.isBroken(prefix+"per", prefix+"calendar", prefix+"tz") {
			if b.Per == 0 && b.Calendar == "" {
				add(prefix+"per", "", "a budget needs a window: per (a duration such as 1h or 24h) or calendar (day or month, in tz)")
			} else if _, err := b.Window(); err != nil {
				key, value := prefix+"per", b.Per.String()
				switch {
				case b.TZ != "" && strings.HasPrefix(err.Error(), "tz "):
					key, value = prefix+"tz", b.TZ
				case b.Calendar != "":
					key, value = prefix+"calendar", b.Calendar
				}
				add(key, value, "%v", err)
			}
		}
		if b.Soft > b.Limit && !o.isBroken(prefix+"soft", prefix+"limit") {
			add(prefix+"soft", b.Soft.String(), "%s is above the limit %s; allowed: 0 (none) to the limit", b.Soft, b.Limit)
		}
		for i, p := range b.Providers {
			checkProvider(fmt.Sprintf("%sproviders[%d]", prefix, i), p)
		}
		for _, l := range []struct {
			key   string
			names []string
		}{{"models", b.Models}, {"fair_keys", b.FairKeys}, {"sessions", b.Sessions}} {
			for i, v := range l.names {
				if err := governor.ValidateResource(v); err != nil || v == "" {
					add(fmt.Sprintf("%s%s[%d]", prefix, l.key, i), v, "%q is not a name; %s", v, nameRule)
				}
			}
		}
	}
	for _, name := range sortedKeys(c.Prices) {
		provider, model, _ := strings.Cut(name, "/")
		checkProvider("prices."+name, provider)
		if model == "" && strings.Contains(name, "/") {
			add("prices."+name, name, "%q names no model; allowed: PROVIDER or PROVIDER/MODEL", name)
		}
		if c.Prices[name] == (Price{}) && !o.isBroken("prices."+name+".input", "prices."+name+".output", "prices."+name+".cached_input", "prices."+name+".per_call") {
			add("prices."+name, name, "no price set; allowed keys: input, output, cached_input (per million tokens), per_call")
		}
	}
	return ps
}

// orNone lists names for a message, "none" when there are none.
func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// parseAmount parses an Amount for the file, the environment or a flag,
// returning a message naming s if it is not one.
func parseAmount(s string) (any, string) {
	v, err := governor.ParseBudgetAmount(s)
	if err != nil {
		return 0, strings.TrimPrefix(err.Error(), governor.ErrInvalid.Error()+": ")
	}
	return Amount(v), ""
}
