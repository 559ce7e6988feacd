package governor

import (
	"fmt"
	"testing"
)

func TestPickWaiters(t *testing.T) {
	ws := []Waiter{{ID: "aaaaaaaa11", Declaration: Declaration{Session: "s1"}}, {ID: "aaaaaaaa22", Declaration: Declaration{Session: "s2"}},
		{ID: "bbbbbbbb33", Declaration: Declaration{Session: "s1"}}}
	tests := []struct {
		sel     CancelSelector
		want    string
		several int
	}{
		{CancelSelector{WaiterID: "aaaaaaaa22"}, "[aaaaaaaa22]", 0},
		{CancelSelector{WaiterID: "bbbbbbbb"}, "[bbbbbbbb33]", 0}, // a unique prefix of 8
		{CancelSelector{WaiterID: "bbbbbbb"}, "[]", 0},            // too short to be a prefix
		{CancelSelector{WaiterID: "aaaaaaaa"}, "[]", 2},           // several
		{CancelSelector{Session: "s1"}, "[aaaaaaaa11 bbbbbbbb33]", 0},
		{CancelSelector{Session: "none"}, "[]", 0},
	}
	for _, tt := range tests {
		got, several := pickWaiters(ws, tt.sel)
		ids := []string{}
		for _, w := range got {
			ids = append(ids, w.ID)
		}
		if s := fmt.Sprint(ids); s != tt.want || several != tt.several {
			t.Errorf("pickWaiters(%+v) = %s, %d; want %s, %d", tt.sel, s, several, tt.want, tt.several)
		}
	}
}
