package redisbackend_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/governor-dev/governor/governor"
	scripts "github.com/governor-dev/governor/scripts-lua"
)

// The event kinds that withdraw a waiter are listed twice, in Go
// (governor.WithdrawKinds, which the file backend reads) and in lib.lua
// (WITHDRAW_KINDS): they must agree, or a waiter withdrawn on one
// backend would queue again instead of learning why.
func TestWithdrawKindsAgree(t *testing.T) {
	m := regexp.MustCompile(`local WITHDRAW_KINDS = \{([^}]*)\}`).FindStringSubmatch(scripts.Admin)
	if m == nil {
		t.Fatal("lib.lua has no WITHDRAW_KINDS table")
	}
	var lua []string
	for _, f := range strings.Split(m[1], ",") {
		if k, _, ok := strings.Cut(strings.TrimSpace(f), " = true"); ok {
			lua = append(lua, k)
		}
	}
	goKinds := slices.Clone(governor.WithdrawKinds)
	slices.Sort(lua)
	slices.Sort(goKinds)
	if !slices.Equal(lua, goKinds) {
		t.Fatalf("lib.lua WITHDRAW_KINDS %v, governor.WithdrawKinds %v: they must list the same kinds", lua, goKinds)
	}
}
