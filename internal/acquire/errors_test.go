package acquire_test

import (
	"strings"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/acquire"
)

// A refusal in a quarantine names it (issue 25.12), both the library's
// BusyError and the CLI's refusal (fail and skip), rather than reading
// "busy: 0 of 1 in use" with nothing holding the slot; after it, neither
// mentions one.
func TestRefusalNamesQuarantine(t *testing.T) {
	now := time.Now()
	busy := &governor.BusyError{Resource: "heavy", Status: governor.Status{Limit: 1, Now: now, Quarantine: now.Add(2 * time.Second)}}
	messages := func() []string {
		return []string{busy.Error(), acquire.Refused(busy, false).Error(), acquire.Refused(busy, true).Error()}
	}
	for i, msg := range messages() {
		if !strings.Contains(msg, "quarantined for 2s more") || !strings.Contains(msg, "data was lost") {
			t.Fatalf("refusal %d in a quarantine: %q", i, msg)
		}
	}
	busy.Status.Quarantine = now.Add(-time.Second)
	for i, msg := range messages() {
		if strings.Contains(msg, "quarantine") {
			t.Fatalf("refusal %d after the quarantine: %q", i, msg)
		}
	}
}
