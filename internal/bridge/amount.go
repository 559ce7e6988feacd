package bridge

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"strings"

	"github.com/governor-dev/governor/governor"
)

// amountAllowed says what an amount may be, for messages.
const amountAllowed = "0 to 1000000000 units with at most 6 decimals, as a number (12.5) or a decimal string (\"12.50\")"

// Amount is an amount of a budget's unit as a client sends it: a JSON
// number, or a decimal string ("0.3", "12.50") read exactly, as the
// CLI reads --cost (governor.ParseBudgetAmount). micro reads it.
type Amount struct {
	text   string // the number's literal, or the string's contents
	quoted bool   // a string
	set    bool
}

// UnmarshalJSON keeps a number's literal or a string's contents; micro
// checks them, naming the field.
func (a *Amount) UnmarshalJSON(b []byte) error {
	t := bytes.TrimSpace(b)
	switch {
	case string(t) == "null":
		*a = Amount{}
	case len(t) > 0 && t[0] == '"':
		var s string
		if err := json.Unmarshal(t, &s); err != nil {
			return err
		}
		*a = Amount{text: s, quoted: true, set: true}
	case len(t) > 0 && (t[0] == '-' || t[0] >= '0' && t[0] <= '9'):
		*a = Amount{text: string(t), set: true}
	default:
		return &json.UnmarshalTypeError{Value: string(t), Type: reflect.TypeFor[float64]()}
	}
	return nil
}

// amountOf is v micro-units as an Amount.
func amountOf(v int64) Amount {
	return Amount{text: governor.FormatBudgetAmount(v), quoted: true, set: true}
}

// micro is a as micro-units (an absent a is 0), exactly: a decimal
// string as the CLI reads it; a number read from its literal (2e3 is
// 2000) and taken at the nearest micro-unit when it is one up to the
// noise of a client's float arithmetic (0.1+0.2, sent as
// 0.30000000000000004, is 0.3). A finer number (0.0000001, 0.1234567),
// a negative one or one out of range is bad input naming what and the
// value, never rounded or clamped silently.
func micro(what string, a Amount) (int64, error) {
	if !a.set {
		return 0, nil
	}
	if a.quoted {
		v, err := governor.ParseBudgetAmount(a.text)
		if err != nil {
			return 0, badRequest("%s %q; allowed: %s", what, a.text, amountAllowed)
		}
		return v, nil
	}
	f, err := strconv.ParseFloat(a.text, 64)
	if err != nil || f < 0 || f > governor.MaxBudgetAmount/governor.MicroUnit {
		return 0, badRequest("%s %s; allowed: %s", what, a.text, amountAllowed)
	}
	n := f * governor.MicroUnit
	m := math.Round(n)
	// f*1e6 is off by at most n·2⁻⁵³; a client's sum of floats by far
	// less than n·1e-12, and a micro-unit by far more.
	if math.Abs(n-m) > n*1e-12+1e-6 {
		return 0, badRequest("%s %s is finer than a millionth of the unit (it would be rounded); allowed: %s", what, a.text, amountAllowed)
	}
	return int64(m), nil
}

// units is v micro-units as units: the float nearest the decimal
// v/10⁶, which JSON writes as that decimal (|v| ≤ MaxBudgetAmount <
// 2⁵³).
func units(v int64) float64 { return float64(v) / governor.MicroUnit }

// Count is a whole number (tokens) as a client sends it: a JSON number
// whose value is whole (2000, 2000.0, 2e3), or a string of decimal
// digits ("9007199254740993": a number above 2⁵³ that a JavaScript
// number cannot hold exactly). Anything else, or beyond int64, is an
// error naming the field and the value.
type Count int64

// UnmarshalJSON reads a whole number or a decimal string of one.
func (c *Count) UnmarshalJSON(b []byte) error {
	t := string(bytes.TrimSpace(b))
	if t == "null" {
		return nil
	}
	what := t // true, an object, ...
	if len(t) > 0 && t[0] == '"' {
		var s string
		if json.Unmarshal([]byte(t), &s) == nil {
			if v, err := strconv.ParseInt(s, 10, 64); err == nil {
				*c = Count(v)
				return nil
			}
		}
		what = "string " + t
	} else if len(t) > 0 && (t[0] == '-' || t[0] >= '0' && t[0] <= '9') {
		if v, ok := wholeNumber(t); ok {
			*c = Count(v)
			return nil
		}
		what = "number " + t
	}
	return &json.UnmarshalTypeError{Value: what, Type: reflect.TypeFor[int64]()}
}

// wholeNumber reads a JSON number's literal whose value is whole and
// fits int64, exactly (2000, 2000.0, 2e3, 1.5e3; not 2.5 nor 1e19).
func wholeNumber(t string) (int64, bool) {
	mant, exp := t, 0
	if i := strings.IndexAny(t, "eE"); i >= 0 {
		e, err := strconv.Atoi(t[i+1:])
		if err != nil || e < -40 || e > 40 {
			return 0, false
		}
		mant, exp = t[:i], e
	}
	sign := ""
	if strings.HasPrefix(mant, "-") {
		sign, mant = "-", mant[1:]
	}
	whole, frac, _ := strings.Cut(mant, ".")
	digits, point := whole+frac, len(whole)+exp
	if point < 0 {
		digits, point = strings.Repeat("0", -point)+digits, 0
	}
	if point > len(digits) {
		digits += strings.Repeat("0", point-len(digits))
	}
	if strings.Trim(digits[point:], "0") != "" {
		return 0, false
	}
	if point == 0 {
		return 0, true
	}
	v, err := strconv.ParseInt(sign+digits[:point], 10, 64)
	return v, err == nil
}
