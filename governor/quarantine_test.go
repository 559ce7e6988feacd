package governor_test

import (
	"strings"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
)

// A refusal in a quarantine names it (issue 25.12), rather than reading
// as "busy: 0 of 1 in use" and nothing more.
func TestBusyErrorNamesQuarantine(t *testing.T) {
	now := time.Now()
	e := &governor.BusyError{Resource: "heavy", Status: governor.Status{Limit: 1, Now: now, Quarantine: now.Add(2 * time.Second)}}
	if msg := e.Error(); !strings.Contains(msg, "quarantined for 2s more") || !strings.Contains(msg, "data was lost") {
		t.Fatalf("busy error in a quarantine: %q", msg)
	}
	e.Status.Quarantine = now.Add(-time.Second)
	if msg := e.Error(); strings.Contains(msg, "quarantine") {
		t.Fatalf("busy error after the quarantine: %q", msg)
	}
}
