package runner

import (
	"bytes"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/safetext/safetexttest"
	"github.com/governor-dev/governor/internal/acquire"
	"github.com/governor-dev/governor/internal/words"
)

// The status line and the refusal quote another process's declaration:
// both escape it.
func TestHostileHolderEscaped(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	st := governor.Status{Limit: 1, Used: 1, Now: now, Holders: []governor.Holder{{
		LeaseID: "id" + safetexttest.Hostile, AcquiredAt: now.Add(-time.Minute),
		Declaration: governor.Declaration{Session: safetexttest.Hostile, Host: safetexttest.Hostile, PID: 42, Command: "sh -c " + safetexttest.Hostile},
	}}}
	safetexttest.Check(t, "status line", renderStatus("heavy", governor.Result{Outcome: governor.Queued, Position: 1, Status: st}, "unknown (no hold history yet)", time.Second))
	var b bytes.Buffer
	words.WriteReport(&b, acquire.Refused(&governor.BusyError{Resource: "heavy", Status: st}, false))
	safetexttest.Check(t, "refusal", b.String())
	safetexttest.Check(t, "skip", acquire.Refused(&governor.BusyError{Resource: "heavy", Status: st}, true).Error())
}
