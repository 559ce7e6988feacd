package view_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/governor-dev/governor/config"
	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/view"
)

// A queue policy is shown as the configuration spells it, keys at their
// default left out.
func TestPolicyText(t *testing.T) {
	for _, tc := range []struct {
		r    config.QueueKeys
		want string
	}{
		{config.QueueKeys{}, ""},
		{config.QueueKeys{Priorities: []string{"critical", "default", "batch"}, Reserve: []string{"critical=1"}, Cap: []string{"batch=2"}},
			"{priorities: [critical, default, batch], reserve: [critical=1], cap: [batch=2]}"},
		{config.QueueKeys{Priorities: []string{"hi", "lo"}, MaxOvertakes: 3, Policy: "eager"}, "{priorities: [hi, lo], max_overtakes: 3, policy: eager}"},
		{config.QueueKeys{Fair: true}, "{fair: true}"},
		{config.QueueKeys{FairWeights: []string{"b=1", "a=2"}, FairCap: 2}, "{fair_weights: [a=2, b=1], fair_cap: 2}"},
		{config.QueueKeys{MaxQueue: 5, MaxWait: 90 * time.Second}, "{max_queue: 5, max_wait: 1m30s}"},
	} {
		p, err := tc.r.QueuePolicy()
		if err != nil {
			t.Fatal(err)
		}
		if got := view.PolicyText(p); got != tc.want {
			t.Errorf("%+v: %q; want %q", tc.r, got, tc.want)
		}
	}
}

// slots shows the policy in force and a drifted one as the configuration
// spells them, never the stored encoding.
func TestSlotsPolicyAsConfigured(t *testing.T) {
	in, err := config.QueueKeys{Priorities: []string{"critical", "batch"}, Reserve: []string{"critical=1"}}.QueuePolicy()
	if err != nil {
		t.Fatal(err)
	}
	asked, err := config.QueueKeys{Priorities: []string{"critical", "batch"}, MaxWait: 30 * time.Second}.QueuePolicy()
	if err != nil {
		t.Fatal(err)
	}
	st := fixedState()[1]
	st.Policy, st.DriftPolicy = in, asked.Encode()
	var out bytes.Buffer
	view.WriteSlots(&out, "p", []governor.Status{st}, nil, nil, nil, nil)
	for _, want := range []string{"policy {priorities: [critical, batch], reserve: [critical=1]}", "asked for queue policy {priorities: [critical, batch], max_wait: 30s}"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("slots lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "c=critical") {
		t.Errorf("slots shows the raw encoding:\n%s", out.String())
	}
	s := view.SlotsOf("p", []governor.Status{st}, nil).Resources[0]
	if s.PolicyText != "{priorities: [critical, batch], reserve: [critical=1]}" || s.Policy != in.Encode() {
		t.Errorf("--json policy %q, policy_text %q", s.Policy, s.PolicyText)
	}
}
