package conformance

import (
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/eventkind"
)

// The backend contract's Admin, Acquire of a takeover and their results,
// in the shapes these tests read.

func actChanged(r governor.ActionResult, err error) (bool, error)    { return r.Changed, err }
func until(r governor.ActionResult, err error) (time.Time, error)    { return r.Until, err }
func withdrawn(r governor.ActionResult, err error) ([]string, error) { return r.IDs, err }
func actionErr(_ governor.ActionResult, err error) error             { return err }
func withdrawal(why governor.Action, ids []string) governor.Action   { why.IDs = ids; return why }
func takeover(req governor.Request, key governor.Key, old string) governor.Request {
	req.Key, req.Takeover = key, old
	return req
}

func pauseKind(paused bool) string {
	if paused {
		return eventkind.Paused
	}
	return eventkind.Resumed
}
