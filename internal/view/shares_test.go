package view_test

import (
	"bytes"
	"encoding/json"
	"regexp"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/capacity"
	"github.com/governor-dev/governor/internal/view"
)

// sharedState is a provider two processes lease shares of: one holds
// 3 slots (1 in use, wanting 3), the other wants 2 and holds nothing yet.
func sharedState() governor.Status {
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	return governor.Status{Key: governor.Key{Project: "prj-0001", Resource: "provider:hot"}, Limit: 4, Used: 3, Now: now,
		Holders: []governor.Holder{{LeaseID: "aaaa0000aaaa0000aaaa0000aaaa0000", Weight: 3, Token: 7, AcquiredAt: now.Add(-time.Minute),
			Heartbeat: now.Add(-time.Second), Expires: now.Add(29 * time.Second),
			Declaration: governor.Declaration{Session: "worker-1", Host: "box1", PID: 4242}}},
		Shares: []capacity.Lease{
			{ID: "aaaa0000aaaa0000aaaa0000aaaa0000", Want: 3, InUse: 1, Held: 3, Expires: now.Add(29 * time.Second)},
			{ID: "bbbb0000bbbb0000bbbb0000bbbb0000", Want: 2, Expires: now.Add(25 * time.Second)},
		}}
}

// slots and its --json (the JSON API's too) show each process's share:
// wanted, held, used.
func TestSlotsShares(t *testing.T) {
	var human bytes.Buffer
	view.WriteSlots(&human, "prj-0001", []governor.Status{sharedState()}, nil, nil, nil, nil)
	for _, want := range []string{
		`(?m)^  SHARE +SESSION +HOST +PID +WANTED +HELD +USED +EXPIRES IN$`,
		`(?m)^  aaaa0000aaaa0000aaaa0000aaaa0000 +worker-1 +box1 +4242 +3 +3 +1 +29s$`,
		`(?m)^  bbbb0000bbbb0000bbbb0000bbbb0000 +- +- +0 +2 +0 +0 +25s$`,
	} {
		if !regexp.MustCompile(want).MatchString(human.String()) {
			t.Errorf("slots:\n%s\nwant a line matching %s", human.String(), want)
		}
	}
	var js bytes.Buffer
	if err := view.WriteJSON(&js, view.SlotsOf("prj-0001", []governor.Status{sharedState()}, nil)); err != nil {
		t.Fatal(err)
	}
	var back view.Slots
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	got := back.Resources[0].Shares
	want := []view.Share{
		{LeaseID: "aaaa0000aaaa0000aaaa0000aaaa0000", Session: "worker-1", Host: "box1", PID: 4242, Wanted: 3, Held: 3, Used: 1, ExpiresInSeconds: 29},
		{LeaseID: "bbbb0000bbbb0000bbbb0000bbbb0000", Wanted: 2, ExpiresInSeconds: 25},
	}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("slots --json shares = %+v, want %+v\n%s", got, want, js.String())
	}
}

// rateShared is a rate-only provider two processes lease rate shares
// of, learning after a loss of its state, and one whose shares are gone
// but whose local grants were counted.
func rateShared() []governor.RateStatus {
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	return []governor.RateStatus{{Key: governor.Key{Project: "prj-0001", Resource: "provider:fast"}, LocalGrants: 1234, Now: now,
		Learning: now.Add(20 * time.Second),
		Shares: []capacity.RateHolder{
			{ID: "aaaa0000aaaa0000aaaa0000aaaa0000", Want: 6000, Rate: 3000, Burst: 50, Granted: 1000, Expires: now.Add(29 * time.Second)},
			{ID: "bbbb0000bbbb0000bbbb0000bbbb0000", Want: 100, Expires: now.Add(25 * time.Second)},
		}}, {Key: governor.Key{Project: "prj-0001", Resource: "provider:was"}, LocalGrants: 7, Now: now}}
}

// slots and its --json (the JSON API's too) show each process's rate
// share (wanted, held and its burst, used: its local grants), the local
// grants counted and the learning mode, after the resources: a
// rate-only provider has no resource of its own.
func TestSlotsRateShares(t *testing.T) {
	var human bytes.Buffer
	view.WriteSlots(&human, "prj-0001", nil, rateShared(), nil, nil, nil)
	golden(t, "slots_rates.txt", human.Bytes())
	var js bytes.Buffer
	if err := view.WriteJSON(&js, view.SlotsOf("prj-0001", nil, nil).WithRates(rateShared())); err != nil {
		t.Fatal(err)
	}
	golden(t, "slots_rates.json", js.Bytes())
}
