package faults_test

import "github.com/governor-dev/governor/governor"

// The backend contract's Admin and Acquire of a takeover, in the shapes
// these tests read.

func actChanged(r governor.ActionResult, err error) (bool, error) { return r.Changed, err }

func takeover(req governor.Request, key governor.Key, old string) governor.Request {
	req.Key, req.Takeover = key, old
	return req
}
